#include "gputwin/sim/goodput_report.hpp"

#include "gputwin/common/byte_text.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/common/json_writer.hpp"
#include "gputwin/sim/report_json.hpp"

#include <cmath>
#include <cstdio>
#include <string>

namespace gputwin::sim {

namespace {

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

GoodputReport goodput_report(const GoodputRun& run, const FailureInputs& failures, bool searched)
{
  const double tokens = failures.tokens, mtbf_gpu_hours = failures.mtbf_gpu_hours;
  const double write_gbps = failures.checkpoint_write_gbps, restart_s = failures.restart_s;
  const int64_t batch = run.plan.effective_global_batch();
  const int64_t gpus = run.plan.gpus();

  const double tokens_per_iteration = static_cast<double>(batch * run.model.seq_len);
  const double iterations_real = std::ceil(tokens / tokens_per_iteration);
  if (iterations_real > 1e15)
    throw InputError("--tokens: " + json_number(tokens) + " tokens take more than 10^15 iterations of " +
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

  return GoodputReport{run,  tokens, mtbf_gpu_hours, write_gbps, restart_s, in,    checkpoint, g,
                       gpus, batch,  gpu_hours,      failure_free_gpu_hours,   searched};
}


// The goodput report as JSON.
void write_goodput_json(std::ostream& out, const GoodputReport& o)
{
  JsonWriter w(out);
  w.begin_object();
  w.field("model", o.run.model.name);
  w.field("cluster", o.run.cluster.name);
  w.field("nodes", static_cast<int64_t>(o.run.cluster.nodes));
  w.field("gpus", o.gpus);
  w.field("plan_source", o.run.plan_source);
  write_plan_json(w, o.run.plan);
  write_overlaps_json(w, o.run.options);
  w.field("iteration_time_s", o.run.report.iteration_time_s);
  w.field("tokens_per_s", o.run.report.tokens_per_s);
  w.field("mfu", o.run.report.mfu); // of the GEMMs' precision peak, as simulate's
  w.field("mfu_bf16", o.run.report.mfu_bf16);
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
void print_goodput_table(std::ostream& out, const GoodputReport& o)
{
  out << "model    " << o.run.model.name << " (h " << o.run.model.hidden << ", a " << o.run.model.heads << ", L "
      << o.run.model.layers << ", s " << o.run.model.seq_len << ", v " << o.run.model.vocab << ")\n";
  out << "plan     " << describe_plan(o.run.plan) << ", overlaps " << overlaps_text(o.run.options) << " ("
      << (o.search ? "best of gputwin search" : "from the flags") << ")\n";
  out << "cluster  " << o.run.cluster.name << ": " << o.run.cluster.nodes << " nodes, " << o.gpus << " GPUs\n\n";
  char line[256];
  auto row = [&](const char* label, const std::string& value) {
    std::snprintf(line, sizeof line, "  %-38s %s\n", label, value.c_str());
    out << line;
  };
  row("iteration time", fmt("%.4f s", o.run.report.iteration_time_s) +
                            (o.run.plan_source == "flags (estimate)" ? " (estimate)" : " (simulated)") +
                            fmt(", %.0f tokens/s", o.run.report.tokens_per_s) + fmt(", MFU %.1f %%", 100 * o.run.report.mfu));
  row("iterations", std::to_string(o.in.iterations) + fmt(" (%.4g tokens", o.tokens) + " / " +
                        std::to_string(o.batch * o.run.model.seq_len) + " per iteration)");
  row("failure-free time to train (T_s)", duration(o.g.solve_s));
  row("checkpoint size", fmt("%.1f GB", static_cast<double>(o.checkpoint.bytes) / 1e9) + " from " +
                             std::to_string(o.checkpoint.writing_ranks) + " ranks (largest " +
                             format_gib_number(static_cast<double>(o.checkpoint.largest_rank_bytes)) + " GiB)");
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

} // namespace gputwin::sim
