// `gputwin goodput`: the calendar time of a training run under failures and checkpoint/restart. The iteration
// time comes from the simulator (a given plan, or the best plan of `gputwin search`), the checkpoint size from
// the memory model, and the checkpoint interval, lost work, restarts and goodput from Young's and Daly's
// formulas (models/goodput.hpp; sim/GOODPUT.md).
#include "gputwin/sim/goodput_report.hpp"
#include "commands.hpp"
#include "overlap_flags.hpp"
#include "gputwin/sim/resource_estimate.hpp"
#include "gputwin/sim/resource_flags.hpp"
#include "gputwin/sim/work_estimate.hpp"
#include "search_core.hpp"

#include "gputwin/models/flops.hpp"
#include "gputwin/models/goodput.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/sim/iteration_estimate.hpp"
#include "gputwin/sim/iteration_executor.hpp"
#include "gputwin/sim/plan_search.hpp"
#include "gputwin/sim/scenario.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/common/json_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

namespace gputwin::cli {

namespace {

// `flag`'s value as a finite number: > 0, or >= 0 with `allow_zero`. Throws InputError naming the flag.
double number_flag(const ParsedArgs& parsed, const std::string& flag, bool allow_zero, const std::string& what)
{
  const auto text = parsed.value(flag);
  if (!text)
    throw InputError(flag + ": required (" + what + ")");
  const std::string expected =
      flag + ": expected a " + (allow_zero ? "non-negative" : "positive") + " number (" + what + "), got '" + *text + "'";
  double v = 0;
  try {
    v = parse_number(flag, *text); // decimal only: no "0x10", "inf", "nan"
  } catch (const InputError&) {
    throw InputError(expected);
  }
  if (v < 0 || (!allow_zero && v == 0))
    throw InputError(expected);
  return v;
}


// The flags of `gputwin goodput`.
ArgParser goodput_parser()
{
  ArgParser parser(
      "gputwin goodput",
      "Goodput of a training run under failures: the iteration time from the simulator (the plan flags, or\n"
      "--search for the best plan of `gputwin search`), the checkpoint size from the memory model (weights and\n"
      "optimizer states of every rank), its write time at the job's aggregate storage bandwidth, Daly's optimum\n"
      "checkpoint interval (Young's sqrt(2 delta M) to first order), and the expected failures, restarts, lost\n"
      "work, goodput fraction, time to train and GPU-hours (formulas: sim/GOODPUT.md).\n\n"
      "example: gputwin goodput --model gpt3-175b --gpus 1024 --search --global-batch 1536 --tokens 300e9\n"
      "         --mtbf-gpu-hours 50000 --checkpoint-write-gbps 10 --restart-s 600");
  add_model_flags(parser);
  add_plan_flags(parser);
  add_overlap_flags(parser);
  parser.add_section("plan search");
  parser.add_switch("--search", "use the best plan of `gputwin search` on --gpus GPUs instead of the plan flags "
                                "(--global-batch and --attention still apply)");
  parser.add_option("--gpus", "N", "GPUs of the job (required with --search; otherwise tp x pp x dp)");
  parser.add_option("--top", "K", "with --search: plans confirmed by the full simulation (default 1)");
  parser.add_option("--jobs", "N", "with --search: threads for the estimates (default: the machine's cores)");
  parser.add_switch("--no-overlaps", "with --search: plans without Megatron-Core's overlaps (default: each plan "
                                     "with every overlap that applies and with none, the faster kept)");
  parser.add_section("simulation");
  add_gpu_model_flags(parser);
  add_framework_flag(parser);
  parser.add_switch("--estimate", "with plan flags: the fast estimate (no SimGrid) instead of the full simulation");
  parser.add_switch("--allow-oom",
                    "with plan flags: run a plan whose busiest GPU needs more memory than the GPU has (default: an "
                    "error)");
  sim::add_max_work_flag(parser);
  topo::add_cluster_flags(parser);
  parser.add_section("failures and checkpoints");
  parser.add_option("--tokens", "T", "tokens to train on (300e9)");
  parser.add_option("--mtbf-gpu-hours", "H",
                    "mean time between failures of one GPU (with its share of the node "
                    "and fabric), hours; job MTBF = H x 3600 / GPUs seconds");
  parser.add_option("--checkpoint-write-gbps", "B",
                    "aggregate write bandwidth of the whole job to checkpoint "
                    "storage, GB/s (10^9 bytes/s)");
  parser.add_option("--restart-s", "R",
                    "seconds from a failure to training again: detect, reschedule, load the "
                    "checkpoint, warm up");
  parser.add_section("output");
  parser.add_switch("--json", "machine-readable report");
  return parser;
}

// --search: the best plan of `gputwin search` on --gpus GPUs, simulated.
sim::GoodputRun searched_run(const ParsedArgs& parsed, const GptConfig& model, const FrameworkProfile& framework)
{
  sim::GoodputRun run;
  run.model = model;
  for (const char* flag : {"--plan", "--tp", "--pp", "--dp", "--micro-batch", "--sp", "--recompute", "--schedule",
                           "--chunks", "--zero", "--estimate", "--overlap-grad-reduce", "--overlap-param-gather",
                           "--tp-comm-overlap", "--overlap-moe-expert-parallel-comm", "--delay-wgrad-compute",
                           "--allow-oom"})
    if (parsed.has(flag))
      throw InputError(std::string(flag) + ": not with --search (the search chooses the plan; give the plan flags "
                                           "without --search to use a plan of your own)");
  const SearchRequest request = read_search_request(parsed, run.model, 1, "with --search (the GPUs of the job)");
  const topo::ClusterGraph graph(request.cluster);
  const std::vector<SimulatedCandidate> ranked =
      rank_and_simulate(request.cluster, graph, run.model, request.plans.fitting, request.gpu, framework,
                        request.jobs, request.top, "goodput", !parsed.has("--json"));
  const SimulatedCandidate& best = ranked.front();
  run.plan = best.estimate.candidate.plan;
  run.options = best.estimate.candidate.options;
  run.cluster = request.cluster;
  run.plan_source = "search";
  run.report = best.report;
  run.peak_memory_bytes = best.estimate.candidate.peak_memory_bytes;
  return run;
}

// The plan flags' scenario, simulated (or estimated with --estimate).
sim::GoodputRun run_of_flags(const ParsedArgs& parsed, const GptConfig& model, const FrameworkProfile& framework)
{
  sim::GoodputRun run;
  run.model = model;
  for (const char* flag : {"--top", "--jobs", "--no-overlaps"})
    if (parsed.has(flag))
      throw InputError(std::string(flag) + ": only with --search");
  run.plan = read_plan(parsed, run.model);
  if (parsed.has("--gpus")) {
    const int64_t gpus = parsed.integer("--gpus").value_or(0);
    if (gpus != run.plan.gpus())
      throw InputError("--gpus: " + *parsed.value("--gpus") + " but the plan's tp x pp x dp is " +
                       std::to_string(run.plan.gpus()) + " (give the plan flags for " + *parsed.value("--gpus") +
                       " GPUs, or --search to find the best plan)");
  }
  sim::Scenario scenario;
  scenario.model = run.model;
  scenario.plan = run.plan;
  scenario.options = overlap_options_from_flags(parsed, run.plan);
  run.options = scenario.options;
  scenario.cluster = topo::read_cluster_request(parsed);
  scenario.allow_oom = parsed.has("--allow-oom");
  scenario.gpu = compute_model_for_gpu(parsed, topo::load_cluster(scenario.cluster).gpu);
  scenario.framework = framework;
  const bool estimate = parsed.has("--estimate");
  const sim::ScenarioRun ran = estimate ? sim::run(scenario, sim::EstimateExecutor())
                                        : sim::run(scenario, sim::SimgridExecutor());
  for (const std::string& warning : ran.check.warnings)
    std::cerr << "gputwin goodput: warning: " << warning << "\n";
  run.cluster = ran.cluster;
  run.peak_memory_bytes = ran.check.busiest.total_bytes;
  run.plan_source = estimate ? "flags (estimate)" : "flags";
  run.report = ran.report;
  return run;
}

} // namespace

int run_goodput(const std::vector<std::string>& args, std::ostream& out)
{
  ArgParser parser = goodput_parser();
  ParsedArgs parsed = parser.parse(args);
  for (const std::string& note : parsed.notes()) // what --megatron-args noted
    std::cerr << "gputwin goodput: note: " << note << "\n";
  if (const std::optional<std::string> note =
          default_attention_for_gpu(parsed, topo::read_cluster(parsed).gpu.generation))
    std::cerr << "gputwin goodput: note: " << *note << "\n";
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }

  const bool search = parsed.has("--search");
  const GptConfig model = model_from_flags(parsed);
  if (!search) { // a plan too large to generate fails first, in milliseconds (--search: read_search_request)
    const ParallelPlan plan = read_plan(parsed, model);
    sim::check_work(sim::estimate_plan_work(model, plan, true, true, overlap_options_from_flags(parsed, plan)),
               sim::max_work(parsed), "the simulation");
  }
  // The failure inputs first: bad ones fail before any simulation runs.
  const double tokens = number_flag(parsed, "--tokens", false, "tokens to train on, e.g. 300e9");
  const double mtbf_gpu_hours = number_flag(parsed, "--mtbf-gpu-hours", false, "one GPU's MTBF in hours");
  const double write_gbps = number_flag(parsed, "--checkpoint-write-gbps", false, "the job's checkpoint write GB/s");
  const double restart_s = number_flag(parsed, "--restart-s", true, "seconds to restart after a failure");
  const bool json = parsed.has("--json");

  const FrameworkProfile framework =
      framework_from_flags(parsed, default_framework_for(topo::read_cluster(parsed).gpu.generation));
  const sim::GoodputRun run = search ? searched_run(parsed, model, framework) : run_of_flags(parsed, model, framework);
  const sim::FailureInputs failures{tokens, mtbf_gpu_hours, write_gbps, restart_s};
  const sim::GoodputReport outcome = sim::goodput_report(run, failures, search);
  if (json)
    sim::write_goodput_json(out, outcome);
  else
    sim::print_goodput_table(out, outcome);
  return 0;
}

} // namespace gputwin::cli
