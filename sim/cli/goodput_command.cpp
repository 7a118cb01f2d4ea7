// `gputwin goodput`: the calendar time of a training run under failures and checkpoint/restart. The iteration
// time comes from the simulator (a given plan, or the best plan of `gputwin search`), the checkpoint size from
// the memory model, and the checkpoint interval, lost work, restarts and goodput from Young's and Daly's
// formulas (models/goodput.hpp; sim/GOODPUT.md).
#include "commands.hpp"
#include "search_core.hpp"

#include "gputwin/models/flops.hpp"
#include "gputwin/models/goodput.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/sim/iteration_estimate.hpp"
#include "gputwin/sim/iteration_executor.hpp"
#include "gputwin/sim/plan_search.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/traces/json_writer.hpp"

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
  char* rest = nullptr;
  const double v = std::strtod(text->c_str(), &rest);
  if (text->empty() || *rest != '\0' || !std::isfinite(v) || v < 0 || (!allow_zero && v == 0))
    throw InputError(flag + ": expected a " + (allow_zero ? "non-negative" : "positive") + " number (" + what +
                     "), got '" + *text + "'");
  return v;
}

struct Run {
  GptConfig model;
  ParallelPlan plan;
  WorkloadOptions options; // the overlaps the plan runs with (the search's choice; none with the plan flags)
  topo::ClusterSpec cluster;
  std::string plan_source; // "flags", "flags (estimate)" or "search"
  double iteration_time_s = 0, tokens_per_s = 0, mfu = 0;
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

} // namespace

int run_goodput(const std::vector<std::string>& args, std::ostream& out)
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
  ParsedArgs parsed = parser.parse(args);
  if (const std::optional<std::string> note =
          default_attention_for_gpu(parsed, topo::read_cluster(parsed).gpu.generation))
    std::cerr << "gputwin goodput: note: " << *note << "\n";
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }

  // The failure inputs first: bad ones fail before any simulation runs.
  const double tokens = number_flag(parsed, "--tokens", false, "tokens to train on, e.g. 300e9");
  const double mtbf_gpu_hours = number_flag(parsed, "--mtbf-gpu-hours", false, "one GPU's MTBF in hours");
  const double write_gbps = number_flag(parsed, "--checkpoint-write-gbps", false, "the job's checkpoint write GB/s");
  const double restart_s = number_flag(parsed, "--restart-s", true, "seconds to restart after a failure");
  const bool search = parsed.has("--search");
  const bool json = parsed.has("--json");

  Run run;
  run.model = model_from_flags(parsed);
  const FrameworkProfile framework = framework_from_flags(parsed, default_framework_for(topo::read_cluster(parsed).gpu.generation));
  if (search) {
    for (const char* flag : {"--plan", "--tp", "--pp", "--dp", "--micro-batch", "--sp", "--recompute", "--schedule",
                             "--chunks", "--zero", "--estimate"})
      if (parsed.has(flag))
        throw InputError(std::string(flag) + ": not with --search (the search chooses the plan; give the plan flags "
                                             "without --search to use a plan of your own)");
    const SearchRequest request = read_search_request(parsed, run.model, 1, "with --search (the GPUs of the job)");
    const topo::ClusterGraph graph(request.cluster);
    const std::vector<SimulatedCandidate> ranked =
        rank_and_simulate(request.cluster, graph, run.model, request.plans.fitting, request.gpu, framework,
                          request.jobs, request.top, "goodput", !json);
    const SimulatedCandidate& best = ranked.front();
    run.plan = best.estimate.candidate.plan;
    run.options = best.estimate.candidate.options;
    run.cluster = request.cluster;
    run.plan_source = "search";
    run.iteration_time_s = best.iteration_time_s;
    run.peak_memory_bytes = best.estimate.candidate.peak_memory_bytes;
  } else {
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
    topo::ClusterSpec cluster = topo::read_cluster(parsed);
    check_fp8_supported(run.plan, cluster);
    const int64_t nodes_needed = (run.plan.gpus() + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
    if (!parsed.has("--nodes"))
      cluster = topo::read_cluster(parsed, static_cast<int>(nodes_needed)); // the fault flags kept
    else if (run.plan.gpus() > cluster.gpus())
      throw InputError("--nodes: the plan needs tp x pp x dp = " + std::to_string(run.plan.gpus()) + " GPUs but " +
                       std::to_string(cluster.nodes) + " nodes of " + cluster.name + " have " +
                       std::to_string(cluster.gpus()) + " (expected --nodes " + std::to_string(nodes_needed) +
                       " or more)");
    run.cluster = cluster;
    const GpuComputeModel gpu =
        compute_model_for_gpu(parsed, cluster.gpu);
    const StageMemory busiest = busiest_stage_memory(run.model, run.plan);
    run.peak_memory_bytes = busiest.total_bytes;
    if (busiest.total_bytes > cluster.gpu.hbm_bytes)
      std::cerr << "gputwin goodput: warning: pipeline stage " << busiest.stage << " needs " << busiest.total_bytes
                << " bytes per GPU (" << static_cast<double>(busiest.total_bytes) / (1 << 30) << " GiB) but the GPU ("
                << cluster.gpu.kind << ") has " << cluster.gpu.hbm_bytes << " bytes; simulating anyway\n";
    // One simulation in this process (SimGrid: one platform per process), as `gputwin simulate` runs it.
    const topo::ClusterGraph graph(cluster);
    const Workload workload = make_workload(run.model, run.plan);
    const bool estimate = parsed.has("--estimate");
    const sim::IterationResult result = estimate ? sim::estimate_iteration(graph, workload, gpu, framework)
                                                 : sim::simulate_iteration(graph, workload, gpu, {}, framework);
    run.plan_source = estimate ? "flags (estimate)" : "flags";
    run.iteration_time_s = result.iteration_time_s;
  }
  const int64_t batch = run.plan.effective_global_batch();
  const int64_t gpus = run.plan.gpus();
  run.tokens_per_s = static_cast<double>(batch * run.model.seq_len) / run.iteration_time_s;
  run.mfu = flops_utilization(model_flops_per_iteration(run.model, batch), run.iteration_time_s, gpus,
                              run.cluster.gpu.peak_bf16_flops);

  const double tokens_per_iteration = static_cast<double>(batch * run.model.seq_len);
  const double iterations_real = std::ceil(tokens / tokens_per_iteration);
  if (iterations_real > 1e15)
    throw InputError("--tokens: " + *parsed.value("--tokens") + " tokens take more than 10^15 iterations of " +
                     std::to_string(batch * run.model.seq_len) + " tokens (expected a smaller number)");
  const CheckpointSize checkpoint = checkpoint_size(run.model, run.plan);
  GoodputInputs in;
  in.iteration_time_s = run.iteration_time_s;
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

  if (json) {
    traces::JsonWriter w(out);
    w.begin_object();
    w.field("model", run.model.name);
    w.field("cluster", run.cluster.name);
    w.field("nodes", static_cast<int64_t>(run.cluster.nodes));
    w.field("gpus", gpus);
    w.field("plan_source", run.plan_source);
    write_plan_json(w, run.plan);
    write_overlaps_json(w, run.options);
    w.field("iteration_time_s", run.iteration_time_s);
    w.field("tokens_per_s", run.tokens_per_s);
    w.field("mfu", run.mfu);
    w.field("peak_memory_bytes", run.peak_memory_bytes);
    w.field("tokens", tokens);
    w.field("tokens_per_iteration", batch * run.model.seq_len);
    w.field("iterations", in.iterations);
    w.field("failure_free_time_s", g.solve_s);
    w.field("checkpoint_bytes", checkpoint.bytes);
    w.field("checkpoint_largest_rank_bytes", checkpoint.largest_rank_bytes);
    w.field("checkpoint_writing_ranks", checkpoint.writing_ranks);
    w.field("checkpoint_write_bytes_per_s", write_gbps * 1e9);
    w.field("checkpoint_time_s", in.checkpoint_s);
    w.field("restart_s", restart_s);
    w.field("mtbf_gpu_hours", mtbf_gpu_hours);
    w.field("job_mtbf_s", in.mtbf_s);
    w.field("young_interval_s", g.young_interval_s);
    w.field("checkpoint_interval_s", g.interval_s);
    w.field("checkpoint_interval_iterations", g.interval_iterations);
    w.field("checkpoints", g.checkpoints);
    w.field("expected_failures", g.expected_failures);
    w.field("expected_restarts", g.expected_failures);
    w.field("checkpoint_overhead_s", g.checkpoint_overhead_s);
    w.field("restart_overhead_s", g.restart_overhead_s);
    w.field("lost_work_s", g.lost_work_s);
    w.field("failure_free_time_with_checkpoints_s", g.failure_free_wall_s);
    w.field("expected_time_to_train_s", g.wall_s);
    w.field("goodput_fraction", g.goodput_fraction);
    w.field("failure_free_gpu_hours", failure_free_gpu_hours);
    w.field("gpu_hours", gpu_hours);
    w.end_object();
    out << "\n";
    return 0;
  }

  out << "model    " << run.model.name << " (h " << run.model.hidden << ", a " << run.model.heads << ", L "
      << run.model.layers << ", s " << run.model.seq_len << ", v " << run.model.vocab << ")\n";
  out << "plan     " << describe_plan(run.plan) << ", overlaps " << overlaps_text(run.options) << " ("
      << (search ? "best of gputwin search" : "from the flags") << ")\n";
  out << "cluster  " << run.cluster.name << ": " << run.cluster.nodes << " nodes, " << gpus << " GPUs\n\n";
  char line[256];
  auto row = [&](const char* label, const std::string& value) {
    std::snprintf(line, sizeof line, "  %-38s %s\n", label, value.c_str());
    out << line;
  };
  row("iteration time", fmt("%.4f s", run.iteration_time_s) +
                            (run.plan_source == "flags (estimate)" ? " (estimate)" : " (simulated)") +
                            fmt(", %.0f tokens/s", run.tokens_per_s) + fmt(", MFU %.1f %%", 100 * run.mfu));
  row("iterations", std::to_string(in.iterations) + fmt(" (%.4g tokens", tokens) + " / " +
                        std::to_string(batch * run.model.seq_len) + " per iteration)");
  row("failure-free time to train (T_s)", duration(g.solve_s));
  row("checkpoint size", fmt("%.1f GB", static_cast<double>(checkpoint.bytes) / 1e9) + " from " +
                             std::to_string(checkpoint.writing_ranks) + " ranks (largest " +
                             gib(checkpoint.largest_rank_bytes) + " GiB)");
  row("checkpoint write time (delta)", fmt("%.1f s", in.checkpoint_s) + fmt(" at %g GB/s", write_gbps));
  row("job MTBF (M)",
      duration(in.mtbf_s) + fmt(" = %g GPU-hours", mtbf_gpu_hours) + " / " + std::to_string(gpus) + " GPUs");
  row("restart time (R)", fmt("%.0f s", restart_s));
  row("checkpoint interval (Daly)",
      duration(g.interval_s) + " = every " + std::to_string(g.interval_iterations) + " iterations");
  row("  Young's sqrt(2 delta M)", duration(g.young_interval_s));
  row("checkpoints written", fmt("%.1f", g.checkpoints));
  row("expected failures (= restarts)", fmt("%.2f", g.expected_failures));
  row("time writing checkpoints", duration(g.checkpoint_overhead_s));
  row("time restarting", duration(g.restart_overhead_s));
  row("lost work (redone after failures)", duration(g.lost_work_s));
  row("expected time to train (T_w)", duration(g.wall_s));
  row("goodput (T_s / T_w)", fmt("%.2f %%", 100 * g.goodput_fraction));
  row("GPU-hours", fmt("%.0f", gpu_hours) + fmt(" (failure-free %.0f)", failure_free_gpu_hours));
  return 0;
}

} // namespace gputwin::cli
