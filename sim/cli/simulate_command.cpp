// `gputwin simulate`: one training iteration of a GPT under a parallel plan on a simulated cluster.
#include "commands.hpp"
#include "gputwin/sim/link_report_output.hpp"
#include "overlap_flags.hpp"
#include "gputwin/common/progress.hpp"
#include "gputwin/sim/report_json.hpp"
#include "resource_estimate.hpp"
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

// What simulate prints beside the iteration's report (sim/iteration_report.hpp).
struct Report {
  sim::IterationReport run;
  int64_t peak_memory_bytes = 0, peak_memory_stage = 0;
  double sim_wall_time_s = 0;
  Stragglers stragglers;  // --slow-gpu / --slow-node as given
  RankSpeeds rank_speeds; // what they make of each rank's speed
};

// The stragglers beside the cluster they slow down (only when some were given: reports without them unchanged).
void write_stragglers_json(JsonWriter& json, const Report& r)
{
  if (r.stragglers.empty())
    return;
  json.key("stragglers");
  json.begin_object();
  json.key("slow_gpus");
  json.begin_array();
  for (const SlowGpu& g : r.stragglers.gpus) {
    json.begin_object();
    json.field("rank", g.rank);
    json.field("factor", g.factor);
    json.end_object();
  }
  json.end_array();
  json.key("slow_nodes");
  json.begin_array();
  for (const SlowNode& n : r.stragglers.nodes) {
    json.begin_object();
    json.field("node", n.node);
    json.field("factor", n.factor);
    json.end_object();
  }
  json.end_array();
  json.key("gpu_speeds"); // every rank not at full speed: GPU factor x node factor
  json.begin_array();
  for (const auto& [rank, speed] : r.rank_speeds) {
    json.begin_object();
    json.field("rank", static_cast<int64_t>(rank));
    json.field("speed", speed);
    json.end_object();
  }
  json.end_array();
  json.field("simulated_programs", r.run.simulated_programs);
  json.end_object();
}

// The link report's members in the JSON report (--link-report without FILE).
struct LinkReportJson {
  const topo::ClusterGraph* graph = nullptr;
  const sim::LinkReport* report = nullptr;
};

// The MoE figures (iteration_report.hpp), with the busiest link kind when the flows were logged.
void write_moe_json(JsonWriter& json, const sim::IterationReport& run, const sim::LinkReport* links)
{
  json.key("moe");
  json.begin_object();
  sim::write_moe_members(json, run);
  if (links && links->busiest_kind)
    json.field("busiest_link_kind", sim::to_string(*links->busiest_kind));
  json.end_object();
}

void print_json(std::ostream& out, const GptConfig& model, const ParallelPlan& plan, const topo::ClusterSpec& cluster,
                const FrameworkProfile& framework, const WorkloadOptions& options, const ResourceEstimate& estimate,
                const Report& r, const LinkReportJson& links, const sim::LinkReport* logged)
{
  JsonWriter json(out);
  json.begin_object();
  sim::write_model_json(json, model);
  sim::write_plan_json(json, plan);
  sim::write_cluster_json(json, cluster);
  write_stragglers_json(json, r);
  json.field("overlap_grad_reduce", options.overlap_grad_reduce);
  json.field("overlap_param_gather", options.overlap_param_gather);
  json.field("tp_comm_overlap", options.tp_comm_overlap);
  json.field("framework", framework.name);
  json.field("cuda_graphs", framework.cuda_graphs);
  json.field("nodes", r.run.nodes);
  json.field("gpus", r.run.gpus);
  json.field("iteration_time_s", r.run.iteration_time_s);
  json.field("tokens_per_s", r.run.tokens_per_s);
  json.field("model_flops", r.run.model_flops);
  json.field("hardware_flops", r.run.hardware_flops);
  json.field("mfu", r.run.mfu);
  json.field("mfu_precision", r.run.mfu_precision);
  json.field("mfu_peak_flops_per_gpu", r.run.mfu_peak_flops);
  json.field("mfu_bf16", r.run.mfu_bf16);
  json.field("hfu", r.run.hfu);
  json.field("bubble_fraction", r.run.bubble_fraction);
  json.field("compute_time_s", r.run.compute_s);
  json.field("exposed_communication_s", r.run.exposed_comm_s);
  json.field("peak_memory_bytes", r.peak_memory_bytes);
  json.field("peak_memory_stage", r.peak_memory_stage);
  json.field("gpu_memory_bytes", cluster.gpu.hbm_bytes);
  json.field("fits_gpu_memory", r.peak_memory_bytes <= cluster.gpu.hbm_bytes);
  json.field("simulated_events", r.run.simulated_events);
  json.key("resource_estimate"); // what the guard estimated before the run (--max-memory)
  json.begin_object();
  json.field("ops", static_cast<int64_t>(std::llround(estimate.ops)));
  json.field("flows", static_cast<int64_t>(std::llround(estimate.flows)));
  json.field("gpu_pairs", static_cast<int64_t>(std::llround(estimate.routes)));
  json.field("memory_bytes", static_cast<int64_t>(std::llround(estimate.bytes)));
  json.end_object();
  json.field("sim_wall_time_s", r.sim_wall_time_s);
  if (r.run.moe)
    write_moe_json(json, r.run, logged);
  if (links.report)
    sim::write_link_report_json(json, *links.graph, *links.report);
  json.end_object();
}

void print_table(std::ostream& out, const GptConfig& model, const ParallelPlan& plan, const topo::ClusterSpec& cluster,
                 const Report& r, const sim::LinkReport* logged)
{
  char line[256];
  out << "model    " << model.name << " (h " << model.hidden << ", a " << model.heads << ", L " << model.layers
      << ", s " << model.seq_len << ", v " << model.vocab << ")\n";
  out << "plan     " << describe_plan(plan) << "\n";
  std::snprintf(line, sizeof line, "cluster  %s: %lld nodes, %lld GPUs used of %d\n", cluster.name.c_str(),
                static_cast<long long>(r.run.nodes), static_cast<long long>(r.run.gpus), cluster.gpus());
  out << line;
  if (!r.stragglers.empty()) {
    std::string slow; // runs of consecutive ranks at one speed as a range: "32-39 at 0.9"
    for (auto it = r.rank_speeds.begin(); it != r.rank_speeds.end();) {
      auto last = it;
      while (std::next(last) != r.rank_speeds.end() && std::next(last)->first == last->first + 1 &&
             std::next(last)->second == it->second)
        ++last;
      if (last == it)
        std::snprintf(line, sizeof line, "%s%d at %.3g", slow.empty() ? "" : ", ", it->first, it->second);
      else
        std::snprintf(line, sizeof line, "%s%d-%d at %.3g", slow.empty() ? "" : ", ", it->first, last->first,
                      it->second);
      slow += line;
      it = std::next(last);
    }
    out << "slow     " << (slow.empty() ? "none (every factor 1)" : "ranks " + slow + " of normal speed") << "; "
        << r.run.simulated_programs << " programs simulated\n";
  }
  out << "\n";
  auto row = [&](const char* label, const std::string& value) {
    std::snprintf(line, sizeof line, "  %-34s %s\n", label, value.c_str());
    out << line;
  };
  // Values beyond a fixed-point column (a 1e-300 GB/s link: 1e300 s) switch to an exponent, so each row stays
  // one short line.
  auto fmt = [](const char* f, double v) {
    char text[64];
    std::string format = f;
    if (!std::isfinite(v) || (v != 0 && (std::fabs(v) >= 1e12 || std::fabs(v) < 1e-4)))
      format = "%.4g" + format.substr(std::min(format.find(' '), format.size())); // the unit kept
    std::snprintf(text, sizeof text, format.c_str(), v);
    return std::string(text);
  };
  row("iteration time", fmt("%.4f s", r.run.iteration_time_s));
  row("throughput", fmt("%.0f tokens/s", r.run.tokens_per_s));
  row("model FLOPs / iteration", fmt("%.4g", r.run.model_flops));
  row("hardware FLOPs / iteration", fmt("%.4g", r.run.hardware_flops));
  // MFU: model FLOPs (dense attention, the papers' convention) against the peak of the GEMMs' precision; HFU:
  // the FLOPs executed, each against its own precision's peak.
  row("MFU", fmt("%.1f %%", 100 * r.run.mfu) + " of " + r.run.mfu_precision + " peak " + fmt("%.0f", r.run.mfu_peak_flops / 1e12) +
                 " TF/s");
  if (r.run.mfu_precision != "bf16")
    row("MFU of bf16 peak", fmt("%.1f %%", 100 * r.run.mfu_bf16));
  row("HFU", fmt("%.1f %%", 100 * r.run.hfu) + " (executed FLOPs)");
  row("pipeline bubble (stage 0)", fmt("%.3f of compute", r.run.bubble_fraction));
  row("compute (stage 0)", fmt("%.4f s", r.run.compute_s));
  row("exposed communication (stage 0)", fmt("%.4f s", r.run.exposed_comm_s));
  row("peak memory (busiest GPU)", fmt("%.2f GiB", static_cast<double>(r.peak_memory_bytes) / (1 << 30)) + " (stage " +
                                       std::to_string(r.peak_memory_stage) + ")");
  if (r.run.moe) {
    row("MoE token exchange (stage 0)", fmt("%.4f s", r.run.moe_exchange_s) + " exposed");
    row("MoE busiest EP rank load", fmt("%.3f", r.run.moe_max_rank_load) + " x balanced (slowest: EP " +
                                        std::to_string(r.run.moe_slowest_ep_index) + ", rank " +
                                        std::to_string(r.run.moe_slowest_rank) + ")");
    row("MoE expert MaxVio", fmt("%.3f", r.run.moe_expert_maxvio) +
                                 (r.run.moe_dropped_fraction > 0
                                      ? fmt(" (%.2f %% of routed tokens dropped)", 100 * r.run.moe_dropped_fraction)
                                      : std::string()));
    if (logged && logged->busiest_kind)
      row("busiest link kind", sim::to_string(*logged->busiest_kind));
  }
  row("simulated events", std::to_string(r.run.simulated_events));
  row("simulator wall time", fmt("%.2f s", r.sim_wall_time_s));
}

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
                   const ResourceEstimate& estimate, const sim::IterationResult& result, const sim::FlowLog* flow_log,
                   const Report& r, const std::vector<std::string>& notes)
{
  const GptConfig& model = scenario.model;
  const ParallelPlan& plan = scenario.plan;
  std::optional<sim::LinkReport> links;
  if (flow_log && r.run.iteration_time_s > 0) {
    links = sim::link_report(graph, *flow_log, r.run.iteration_time_s);
    links->exposed = sim::attribute_exposed(graph, *flow_log, result.programs, 0, result.stages.front().exposed_spans);
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
    print_json(out, model, plan, cluster, framework, scenario.options, estimate, r,
               links_inline ? LinkReportJson{&graph, &*links} : LinkReportJson{}, links ? &*links : nullptr);
  } else {
    print_table(out, model, plan, cluster, r, links ? &*links : nullptr);
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
  add_max_memory_flag(parser);
  add_max_work_flag(parser);
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
  Report r;
  r.stragglers = scenario.stragglers;
  // The work first, from closed forms and small probes: the rules below walk the pipeline schedules.
  check_work(estimate_plan_work(model, plan, true, true, overlap_options_from_flags(parsed, plan)), max_work(parsed),
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

  const int64_t limit = max_memory_bytes(parsed);
  if (!parsed.has("--estimate")) // SimGrid's platform grows with the GPUs: refuse a huge cluster before building it
    check_resources(estimate_platform(scenario.cluster.nodes > 0 ? as_named.gpus()
                                                                 : sim::nodes_needed(plan, as_named) *
                                                                       as_named.gpus_per_node),
                    limit, parsed, "the simulation");
  const topo::ClusterSpec cluster = sim::size_cluster(scenario);
  const GpuComputeModel gpu = compute_model_for_gpu(parsed, cluster.gpu);
  const FrameworkProfile framework = framework_from_flags(parsed, default_framework_for(cluster.gpu.generation));
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
  ResourceEstimate estimate =
      estimate_simulation(cluster, model, plan, options, !parsed.has("--estimate"), parsed.has("--timeline"), limit);
  if (!r.rank_speeds.empty()) { // every stage's program repeated for each class of ranks stragglers leave
    const sim::StragglerClasses classes = sim::straggler_classes(plan, r.rank_speeds);
    const double programs_per_stage = static_cast<double>(classes.replicas.size() * classes.tp_indices.size());
    estimate.ops *= programs_per_stage;
    estimate.bytes *= programs_per_stage;
  }
  check_resources(estimate, limit, parsed, "the simulation");

  const auto wall_start = std::chrono::steady_clock::now();
  const topo::ClusterGraph graph(cluster);
  const Workload workload = make_workload(model, plan, options);
  if (const auto dir = parsed.value("--chakra")) // before the run: a bad DIR fails at once
    export_chakra(*dir, workload, gpu, chakra_all_ranks);
  sim::IterationOptions run_options;
  run_options.record_timeline = parsed.has("--timeline");
  // Every flow on the network, for the link report and the timeline's link counters (results unchanged).
  if (parsed.has("--link-report") && parsed.has("--estimate"))
    throw InputError("--link-report: needs the flow-level simulation (expected no --estimate: the estimate times "
                     "operations, not flows)");
  sim::FlowLog flow_log;
  // (MoE: always, for the busiest link kind of the report)
  if (!parsed.has("--estimate") && (parsed.has("--link-report") || parsed.has("--timeline") || model.moe.enabled()))
    run_options.flow_log = &flow_log;
  // For a person at a terminal, and only once the run has taken 2 s: the ops executed so far.
  ProgressBar bar("simulate: ops", !parsed.has("--json"), ProgressBar::Options{2.0, 0.25, 24});
  run_options.progress = [&bar](int64_t done, int64_t total) {
    bar.update(static_cast<size_t>(done), static_cast<size_t>(total));
  };
  const sim::EstimateExecutor estimator;
  const sim::SimgridExecutor simgrid;
  const sim::IterationExecutor& executor =
      parsed.has("--estimate") ? static_cast<const sim::IterationExecutor&>(estimator) : simgrid;
  const sim::IterationResult result = executor.run(graph, workload, gpu, framework, run_options, r.rank_speeds);
  bar.finish();
  r.sim_wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  r.run = sim::iteration_report(model, plan, cluster, result);

  write_outputs(parsed, out, scenario, cluster, graph, framework, estimate, result, run_options.flow_log, r, notes);
  return 0;
}

} // namespace gputwin::cli
