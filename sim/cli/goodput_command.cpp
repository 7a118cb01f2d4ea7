// `gputwin goodput`: the calendar time of a training run under failures and checkpoint/restart. The iteration
// time comes from the simulator (a given plan, or the best plan of `gputwin search`), the checkpoint size from
// the memory model, and the checkpoint interval, lost work, restarts and goodput from Young's and Daly's
// formulas (models/goodput.hpp; sim/GOODPUT.md).
#include "gputwin/sim/report_json.hpp"
#include "commands.hpp"
#include "overlap_flags.hpp"
#include "resource_estimate.hpp"
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

struct Run {
  GptConfig model;
  ParallelPlan plan;
  WorkloadOptions options; // the overlaps the plan runs with (the search's choice, or the overlap flags)
  topo::ClusterSpec cluster;
  std::string plan_source; // "flags", "flags (estimate)" or "search"
  sim::IterationReport report;
  int64_t peak_memory_bytes = 0;
};

std::string fmt(const char* format, double v)
{
  char text[96];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

// Seconds as "12345 s (3.43 h)" or "(1.23 days)".
std::string duration(double s)
{
  if (s >= 2 * 86400)
    return fmt("%.0f s", s) + fmt(" (%.2f days)", s / 86400);
  if (s >= 3600)
    return fmt("%.0f s", s) + fmt(" (%.2f h)", s / 3600);
  return fmt("%.1f s", s);
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
  add_max_work_flag(parser);
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
Run searched_run(const ParsedArgs& parsed, const GptConfig& model, const FrameworkProfile& framework)
{
  Run run;
  run.model = model;
  for (const char* flag : {"--plan", "--tp", "--pp", "--dp", "--micro-batch", "--sp", "--recompute", "--schedule",
                           "--chunks", "--zero", "--estimate", "--overlap-grad-reduce", "--overlap-param-gather",
                           "--tp-comm-overlap", "--allow-oom"})
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
Run run_of_flags(const ParsedArgs& parsed, const GptConfig& model, const FrameworkProfile& framework)
{
  Run run;
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

// Everything the goodput report prints.
struct Outcome {
  Run run;
  double tokens = 0, mtbf_gpu_hours = 0, write_gbps = 0, restart_s = 0;
  GoodputInputs in;
  CheckpointSize checkpoint;
  GoodputResult g;
  int64_t gpus = 0, batch = 0;
  double gpu_hours = 0, failure_free_gpu_hours = 0;
  bool search = false;
};

// The goodput report as JSON.
void print_goodput_json(std::ostream& out, const Outcome& o)
{
  JsonWriter w(out);
  w.begin_object();
  w.field("model", o.run.model.name);
  w.field("cluster", o.run.cluster.name);
  w.field("nodes", static_cast<int64_t>(o.run.cluster.nodes));
  w.field("gpus", o.gpus);
  w.field("plan_source", o.run.plan_source);
  sim::write_plan_json(w, o.run.plan);
  sim::write_overlaps_json(w, o.run.options);
  w.field("iteration_time_s", o.run.report.iteration_time_s);
  w.field("tokens_per_s", o.run.report.tokens_per_s);
  w.field("mfu", o.run.report.mfu_bf16);
  w.field("peak_memory_bytes", o.run.peak_memory_bytes);
  w.field("tokens", o.tokens);
  w.field("tokens_per_iteration", o.batch * o.run.model.seq_len);
  w.field("iterations", o.in.iterations);
  w.field("failure_free_time_s", o.g.solve_s);
  w.field("checkpoint_bytes", o.checkpoint.bytes);
  w.field("checkpoint_largest_rank_bytes", o.checkpoint.largest_rank_bytes);
  w.field("checkpoint_writing_ranks", o.checkpoint.writing_ranks);
  w.field("checkpoint_write_bytes_per_s", o.write_gbps * 1e9);
  w.field("checkpoint_time_s", o.in.checkpoint_s);
  w.field("restart_s", o.restart_s);
  w.field("mtbf_gpu_hours", o.mtbf_gpu_hours);
  w.field("job_mtbf_s", o.in.mtbf_s);
  w.field("young_interval_s", o.g.young_interval_s);
  w.field("checkpoint_interval_s", o.g.interval_s);
  w.field("checkpoint_interval_iterations", o.g.interval_iterations);
  w.field("checkpoints", o.g.checkpoints);
  w.field("expected_failures", o.g.expected_failures);
  w.field("expected_restarts", o.g.expected_failures);
  w.field("checkpoint_overhead_s", o.g.checkpoint_overhead_s);
  w.field("restart_overhead_s", o.g.restart_overhead_s);
  w.field("lost_work_s", o.g.lost_work_s);
  w.field("failure_free_time_with_checkpoints_s", o.g.failure_free_wall_s);
  w.field("expected_time_to_train_s", o.g.wall_s);
  w.field("goodput_fraction", o.g.goodput_fraction);
  w.field("failure_free_gpu_hours", o.failure_free_gpu_hours);
  w.field("gpu_hours", o.gpu_hours);
  w.end_object();
  out << "\n";
}

// The goodput report as a table.
void print_goodput_table(std::ostream& out, const Outcome& o)
{
  out << "model    " << o.run.model.name << " (h " << o.run.model.hidden << ", a " << o.run.model.heads << ", L "
      << o.run.model.layers << ", s " << o.run.model.seq_len << ", v " << o.run.model.vocab << ")\n";
  out << "plan     " << describe_plan(o.run.plan) << ", overlaps " << sim::overlaps_text(o.run.options) << " ("
      << (o.search ? "best of gputwin search" : "from the flags") << ")\n";
  out << "cluster  " << o.run.cluster.name << ": " << o.run.cluster.nodes << " nodes, " << o.gpus << " GPUs\n\n";
  char line[256];
  auto row = [&](const char* label, const std::string& value) {
    std::snprintf(line, sizeof line, "  %-38s %s\n", label, value.c_str());
    out << line;
  };
  row("iteration time", fmt("%.4f s", o.run.report.iteration_time_s) +
                            (o.run.plan_source == "flags (estimate)" ? " (estimate)" : " (simulated)") +
                            fmt(", %.0f tokens/s", o.run.report.tokens_per_s) + fmt(", MFU %.1f %%", 100 * o.run.report.mfu_bf16));
  row("iterations", std::to_string(o.in.iterations) + fmt(" (%.4g tokens", o.tokens) + " / " +
                        std::to_string(o.batch * o.run.model.seq_len) + " per iteration)");
  row("failure-free time to train (T_s)", duration(o.g.solve_s));
  row("checkpoint size", fmt("%.1f GB", static_cast<double>(o.checkpoint.bytes) / 1e9) + " from " +
                             std::to_string(o.checkpoint.writing_ranks) + " ranks (largest " +
                             gib(o.checkpoint.largest_rank_bytes) + " GiB)");
  row("checkpoint write time (delta)", fmt("%.1f s", o.in.checkpoint_s) + fmt(" at %g GB/s", o.write_gbps));
  row("job MTBF (M)",
      duration(o.in.mtbf_s) + fmt(" = %g GPU-hours", o.mtbf_gpu_hours) + " / " + std::to_string(o.gpus) + " GPUs");
  row("restart time (R)", fmt("%.0f s", o.restart_s));
  row("checkpoint interval (Daly)",
      duration(o.g.interval_s) + " = every " + std::to_string(o.g.interval_iterations) + " iterations" +
          (o.g.interval_is_the_run ? " (the whole run: Daly's optimum is longer)" : ""));
  row("  Young's sqrt(2 delta M)", duration(o.g.young_interval_s));
  row("checkpoints written", fmt("%.1f", o.g.checkpoints));
  row("expected failures (= restarts)", fmt("%.2f", o.g.expected_failures));
  row("time writing checkpoints", duration(o.g.checkpoint_overhead_s));
  row("time restarting", duration(o.g.restart_overhead_s));
  row("lost work (redone after failures)", duration(o.g.lost_work_s));
  row("expected time to train (T_w)", duration(o.g.wall_s));
  row("goodput (T_s / T_w)", fmt("%.2f %%", 100 * o.g.goodput_fraction));
  row("GPU-hours", fmt("%.0f", o.gpu_hours) + fmt(" (failure-free %.0f)", o.failure_free_gpu_hours));
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
    check_work(estimate_plan_work(model, plan, true, true, overlap_options_from_flags(parsed, plan)),
               max_work(parsed), "the simulation");
  }
  // The failure inputs first: bad ones fail before any simulation runs.
  const double tokens = number_flag(parsed, "--tokens", false, "tokens to train on, e.g. 300e9");
  const double mtbf_gpu_hours = number_flag(parsed, "--mtbf-gpu-hours", false, "one GPU's MTBF in hours");
  const double write_gbps = number_flag(parsed, "--checkpoint-write-gbps", false, "the job's checkpoint write GB/s");
  const double restart_s = number_flag(parsed, "--restart-s", true, "seconds to restart after a failure");
  const bool json = parsed.has("--json");

  const FrameworkProfile framework =
      framework_from_flags(parsed, default_framework_for(topo::read_cluster(parsed).gpu.generation));
  const Run run = search ? searched_run(parsed, model, framework) : run_of_flags(parsed, model, framework);
  const int64_t batch = run.plan.effective_global_batch();
  const int64_t gpus = run.plan.gpus();

  const double tokens_per_iteration = static_cast<double>(batch * run.model.seq_len);
  const double iterations_real = std::ceil(tokens / tokens_per_iteration);
  if (iterations_real > 1e15)
    throw InputError("--tokens: " + *parsed.value("--tokens") + " tokens take more than 10^15 iterations of " +
                     std::to_string(batch * run.model.seq_len) + " tokens (expected a smaller number)");
  const CheckpointSize checkpoint = checkpoint_size(run.model, run.plan);
  GoodputInputs in;
  in.iteration_time_s = run.report.iteration_time_s;
  in.iterations = static_cast<int64_t>(iterations_real);
  in.checkpoint_s = static_cast<double>(checkpoint.bytes) / (write_gbps * 1e9);
  in.restart_s = restart_s;
  in.mtbf_s = job_mtbf_s(mtbf_gpu_hours, gpus);
  if (!(in.checkpoint_s > 0) || !std::isfinite(in.mtbf_s) || !(in.mtbf_s > 0))
    throw InputError("--checkpoint-write-gbps/--mtbf-gpu-hours: out of range (the checkpoint time " +
                     std::to_string(in.checkpoint_s) + " s and the job MTBF " + std::to_string(in.mtbf_s) +
                     " s must be positive and finite)");
  const GoodputResult g = goodput(in);
  const double gpu_hours = static_cast<double>(gpus) * g.wall_s / 3600;
  const double failure_free_gpu_hours = static_cast<double>(gpus) * g.solve_s / 3600;

  const Outcome outcome{run,     tokens, mtbf_gpu_hours, write_gbps, restart_s, in,       checkpoint, g,
                        gpus,    batch,  gpu_hours,      failure_free_gpu_hours,   search};
  if (json)
    print_goodput_json(out, outcome);
  else
    print_goodput_table(out, outcome);
  return 0;
}

} // namespace gputwin::cli
