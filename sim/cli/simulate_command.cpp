// `gputwin simulate`: one training iteration of a GPT under a parallel plan on a simulated cluster.
#include "commands.hpp"
#include "gputwin/sim/link_report_output.hpp"
#include "overlap_flags.hpp"
#include "gputwin/common/progress.hpp"
#include "gputwin/sim/simulation_output.hpp"
#include "gputwin/sim/resource_estimate.hpp"
#include "gputwin/sim/resource_flags.hpp"
#include "gputwin/sim/work_estimate.hpp"
#include "search_core.hpp"
#include "gputwin/sim/chrome_timeline.hpp"

#include "gputwin/chakra/chakra_writer.hpp"
#include "gputwin/models/token_exchange.hpp"
#include "gputwin/models/workload_unfolding.hpp"
#include "gputwin/models/flops.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/models/stragglers.hpp"
#include "gputwin/sim/iteration_estimate.hpp"
#include "gputwin/sim/iteration_executor.hpp"
#include "gputwin/sim/straggler_unfolding.hpp"
#include "gputwin/sim/link_report.hpp"
#include "gputwin/sim/scenario.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/common/json_writer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>

namespace gputwin::cli {

namespace {

// The most Chakra nodes `--chakra` writes for every rank (about 60 bytes each on disk: 1.2 GB); beyond, the
// folded export (one file per stage) is the way.
constexpr int64_t max_chakra_nodes = 20'000'000;

// --chakra DIR: the workload as Chakra execution traces, every rank's (all) or one per pipeline stage (folded).
void export_chakra(const std::string& dir, const Workload& workload, const GpuComputeModel& gpu, bool all_ranks)
{
  chakra::ChakraExportOptions chakra_options;
  chakra_options.compute_duration_s = [&gpu](const traces::Op& op) { return compute_duration_s(gpu, op); };
  // A MoE token exchange under imbalance: an all-to-all-v, written as messages of each pair's bytes.
  chakra_options.all_to_all_weights = [&workload](const traces::Op& op) {
    return workload.expert_loads ? token_exchange_weights(*workload.expert_loads, op) : std::nullopt;
  };
  const traces::OpGraph folded = workload_graph(workload);
  if (!all_ranks) {
    chakra::write_chakra_traces(folded, dir, chakra_options);
    return;
  }
  // Every rank of a stage holds its stage program's nodes (unfolded_workload_graph: the same ops).
  int64_t nodes = 0;
  for (const traces::RankProgram& program : folded.ranks)
    nodes += chakra::chakra_node_count(folded, program, chakra_options);
  nodes *= workload.plan.tp * workload.plan.cp * workload.plan.dp;
  if (nodes > max_chakra_nodes)
    throw InputError("--chakra: every rank's trace would hold " + std::to_string(nodes) + " nodes over " +
                     std::to_string(workload.plan.gpus()) + " files (at most " + std::to_string(max_chakra_nodes) +
                     " are written; expected --chakra-ranks folded, one file per pipeline stage)");
  chakra::write_chakra_traces(unfolded_workload_graph(workload), dir, chakra_options);
}

// Everything after the run: the link report and the timeline files, the notes on stderr, the report on stdout.
void write_outputs(const ParsedArgs& parsed, std::ostream& out, const sim::Scenario& scenario,
                   const topo::ClusterSpec& cluster, const topo::ClusterGraph& graph, const FrameworkProfile& framework,
                   const sim::ResourceEstimate& estimate, const sim::IterationResult& result, const sim::FlowLog* flow_log,
                   const sim::SimulationReport& r, const std::vector<std::string>& notes)
{
  const GptConfig& model = scenario.model;
  const ParallelPlan& plan = scenario.plan;
  std::optional<sim::LinkReport> links;
  if (flow_log && r.run.iteration_time_s > 0) {
    links = sim::link_report(graph, *flow_log, r.run.iteration_time_s);
    links->exposed = sim::attribute_exposed(graph, *flow_log, result.programs, 0, result.stages.front().exposed_spans);
  } else if (result.link_usage && r.run.iteration_time_s > 0) {
    links = sim::link_report(graph, *result.link_usage, r.run.iteration_time_s); // (no exposed attribution)
  }
  if (const auto file = parsed.value("--timeline")) {
    std::vector<sim::CounterTrack> counters;
    if (links)
      for (const sim::LinkUse* use : sim::busiest_links(*links, 8))
        counters.push_back(sim::CounterTrack{graph.links()[static_cast<size_t>(use->link)].name,
                                        sim::link_utilisation_steps(graph, *flow_log, use->link)});
    // (with stragglers programs stand for different numbers of ranks: the label leaves it out)
    sim::write_chrome_timeline_file(*file, result, r.rank_speeds.empty() ? plan.tp * plan.cp * plan.dp : 1, counters);
  }
  const std::string link_file = parsed.value("--link-report").value_or("");
  if (links && !link_file.empty())
    sim::write_link_report_file(link_file, graph, *links);
  const bool links_inline = links && parsed.has("--link-report") && link_file.empty();
  // What the defaults were and what to watch, after every file is written (a failed write stays one line) and
  // before the report (a reader of stdout + stderr finds the JSON last).
  for (const std::string& note : notes)
    std::cerr << "gputwin simulate: " << (note.rfind("warning: ", 0) == 0 ? "" : "note: ") << note << "\n";
  if (parsed.has("--json")) {
    const sim::RunSizeEstimate size{estimate.ops, estimate.flows, estimate.routes, estimate.bytes};
    sim::write_simulation_json(out, model, plan, cluster, framework, scenario.options, size, r,
                               links_inline ? sim::LinkReportJson{&graph, &*links} : sim::LinkReportJson{},
                               links ? &*links : nullptr);
  } else {
    sim::print_simulation_table(out, model, plan, cluster, r, links ? &*links : nullptr);
    if (links_inline)
      sim::print_link_report(out, graph, *links);
  }
}

// The flags of `gputwin simulate`.
ArgParser simulate_parser()
{
  ArgParser parser("gputwin simulate",
                   "Simulates one training iteration of a GPT under a parallel plan on a cluster: every kernel\n"
                   "timed by the GPU compute model, every collective and pipeline transfer as flows sharing the\n"
                   "cluster's links on SimGrid. Reports iteration time, throughput, MFU/HFU, pipeline bubble,\n"
                   "compute vs exposed communication, and the busiest GPU's memory.\n\n"
                   "example: gputwin simulate --model gpt3-175b --plan paper --sp --recompute selective");
  add_model_flags(parser);
  add_plan_flags(parser);
  add_overlap_flags(parser);
  parser.add_switch("--allow-oom",
                    "simulate a plan whose busiest GPU needs more memory than the GPU has (default: an error)");
  add_gpu_model_flags(parser);
  add_framework_flag(parser);
  parser.add_switch("--estimate", "fast estimate (longest paths through the op graph, no SimGrid; transfers sharing a link slow each other once)");
  sim::add_max_memory_flag(parser);
  sim::add_max_work_flag(parser);
  topo::add_cluster_flags(parser);
  parser.add_section("stragglers");
  add_straggler_flags(parser);
  parser.add_section("output");
  parser.add_switch("--json", "machine-readable report (with the model, plan and cluster it ran)");
  parser.add_option("--timeline", "FILE",
                    "write a Chrome trace-event timeline, with the busiest links' utilisation (open in ui.perfetto.dev)");
  parser.add_optional_value("--link-report", "FILE",
                            "bytes and busy fraction per link and link kind, the busiest links, stage 0's exposed "
                            "communication by link; JSON into FILE if given (sim/README.md \"Link report\")");
  parser.add_option("--chakra", "DIR",
                    "write the workload as Chakra execution traces, DIR/workload.<rank>.et per rank (ASTRA-sim's "
                    "input; sim/README.md \"Chakra export\")");
  parser.add_option("--chakra-ranks", "all|folded",
                    "with --chakra: a file for every rank (all, the default: what ASTRA-sim runs) or one per "
                    "pipeline stage, the representative rank the simulator runs (folded)");
  return parser;
}

} // namespace

int run_simulate(const std::vector<std::string>& args, std::ostream& out)
{
  ArgParser parser = simulate_parser();
  ParsedArgs parsed = parser.parse(args);
  const std::optional<std::string> attention_note =
      default_attention_for_gpu(parsed, topo::read_cluster(parsed).gpu.generation);
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  check_output_flags(parsed, {"--timeline", "--link-report"}); // before the work: a typo fails at once
  sim::Scenario scenario;
  scenario.model = model_from_flags(parsed);
  scenario.plan = read_plan(parsed, scenario.model);
  scenario.stragglers = read_stragglers(parsed);
  scenario.cluster = topo::read_cluster_request(parsed);
  scenario.allow_oom = parsed.has("--allow-oom");
  const GptConfig& model = scenario.model;
  const ParallelPlan& plan = scenario.plan;
  sim::SimulationReport r;
  r.stragglers = scenario.stragglers;
  // The work first, from closed forms and small probes: the rules below walk the pipeline schedules.
  sim::check_work(sim::estimate_plan_work(model, plan, true, true, overlap_options_from_flags(parsed, plan)), sim::max_work(parsed),
             "the simulation");
  // The rules first, on the cluster as named (its GPU is the same at any node count): FP8, memory, stragglers.
  const topo::ClusterSpec as_named = topo::load_cluster(scenario.cluster);
  const sim::ScenarioCheck check = sim::validate(scenario, as_named);
  r.peak_memory_bytes = check.busiest.total_bytes;
  r.peak_memory_stage = check.busiest.stage;
  std::vector<std::string> notes = plan_notes(parsed, plan); // stated on stderr once the run has succeeded
  if (attention_note)
    notes.insert(notes.begin(), *attention_note);
  for (const std::string& warning : check.warnings)
    notes.push_back("warning: " + warning);

  const int64_t limit = sim::max_memory_bytes(parsed);
  if (!parsed.has("--estimate")) // SimGrid's platform grows with the GPUs: refuse a huge cluster before building it
    sim::check_resources(sim::estimate_platform(scenario.cluster.nodes > 0 ? as_named.gpus()
                                                                 : sim::nodes_needed(plan, as_named) *
                                                                       as_named.gpus_per_node),
                    limit, parsed, "the simulation");
  const topo::ClusterSpec cluster = sim::size_cluster(scenario);
  scenario.gpu = compute_model_for_gpu(parsed, cluster.gpu);
  scenario.framework = framework_from_flags(parsed, default_framework_for(cluster.gpu.generation));
  r.rank_speeds = rank_speeds(r.stragglers, plan.gpus(), cluster.gpus_per_node);
  if (!r.stragglers.empty() && parsed.has("--chakra"))
    throw InputError(std::string(r.stragglers.gpus.empty() ? "--slow-node" : "--slow-gpu") +
                     ": not with --chakra (the export writes every rank at the normal speed)");

  // Resources before anything large is allocated: the cluster graph, the workload, SimGrid's platform.
  scenario.options = overlap_options_from_flags(parsed, plan);
  const WorkloadOptions& options = scenario.options;
  const std::string chakra_ranks = parsed.value("--chakra-ranks").value_or("all");
  if (chakra_ranks != "all" && chakra_ranks != "folded")
    throw InputError("--chakra-ranks: expected all or folded, got '" + chakra_ranks + "'");
  if (parsed.has("--chakra-ranks") && !parsed.has("--chakra"))
    throw InputError("--chakra-ranks: needs --chakra DIR");
  const bool chakra_all_ranks = chakra_ranks == "all";
  sim::ResourceEstimate estimate =
      sim::estimate_simulation(cluster, model, plan, options, !parsed.has("--estimate"), parsed.has("--timeline"), limit);
  if (!r.rank_speeds.empty()) { // every stage's program repeated for each class of ranks stragglers leave
    const sim::StragglerClasses classes = sim::straggler_classes(plan, r.rank_speeds);
    const double programs_per_stage = static_cast<double>(classes.replicas.size() * classes.tp_indices.size());
    estimate.ops *= programs_per_stage;
    estimate.bytes *= programs_per_stage;
  }
  sim::check_resources(estimate, limit, parsed, "the simulation");

  const auto wall_start = std::chrono::steady_clock::now();
  if (const auto dir = parsed.value("--chakra")) // before the run: a bad DIR fails at once
    export_chakra(*dir, make_workload(model, plan, with_framework_options(options, *scenario.framework)), *scenario.gpu,
                  chakra_all_ranks);
  sim::IterationOptions run_options;
  run_options.record_timeline = parsed.has("--timeline");
  // Every flow on the network, for the link report and the timeline's link counters (results unchanged).
  if (parsed.has("--link-report") && parsed.has("--estimate"))
    throw InputError("--link-report: needs the flow-level simulation (expected no --estimate: the estimate times "
                     "operations, not flows)");
  sim::FlowLog flow_log;
  if (!parsed.has("--estimate") && (parsed.has("--link-report") || parsed.has("--timeline")))
    run_options.flow_log = &flow_log;
  // MoE: each link's usage for the busiest link kind of the report (extrapolated with the steady state).
  run_options.link_usage = model.moe.enabled() && run_options.flow_log == nullptr;
  // For a person at a terminal, and only once the run has taken 2 s: the ops executed so far.
  ProgressBar bar("simulate: ops", !parsed.has("--json"), ProgressBar::Options{2.0, 0.25, 24});
  run_options.progress = [&bar](int64_t done, int64_t total) {
    bar.update(static_cast<size_t>(done), static_cast<size_t>(total));
  };
  const sim::EstimateExecutor estimator;
  const sim::SimgridExecutor simgrid;
  const sim::IterationExecutor& executor =
      parsed.has("--estimate") ? static_cast<const sim::IterationExecutor&>(estimator) : simgrid;
  const sim::ScenarioRun ran = sim::run(scenario, executor, run_options);
  bar.finish();
  r.sim_wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  r.run = ran.report;

  write_outputs(parsed, out, scenario, ran.cluster, *ran.graph, *scenario.framework, estimate, ran.result,
                run_options.flow_log, r, notes);
  return 0;
}

} // namespace gputwin::cli
