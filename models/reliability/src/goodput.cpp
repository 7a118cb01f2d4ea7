#include "gputwin/models/goodput.hpp"

#include "gputwin/common/checked_math.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/model_state_memory.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace gputwin {

namespace {

std::string seconds(double s)
{
  char text[64];
  std::snprintf(text, sizeof text, "%.6g s", s);
  return text;
}

} // namespace

double job_mtbf_s(double mtbf_gpu_hours, int64_t gpus)
{
  return mtbf_gpu_hours * 3600.0 / static_cast<double>(gpus);
}

double young_checkpoint_interval_s(double checkpoint_s, double mtbf_s)
{
  return std::sqrt(2.0 * checkpoint_s * mtbf_s);
}

double daly_checkpoint_interval_s(double checkpoint_s, double mtbf_s)
{
  if (checkpoint_s >= 2.0 * mtbf_s)
    return mtbf_s;
  const double ratio = checkpoint_s / (2.0 * mtbf_s); // delta / (2M) < 1
  return young_checkpoint_interval_s(checkpoint_s, mtbf_s) * (1.0 + std::sqrt(ratio) / 3.0 + ratio / 9.0) -
         checkpoint_s;
}

double daly_expected_wall_time_s(double solve_s, double interval_s, double checkpoint_s, double restart_s,
                                 double mtbf_s)
{
  // expm1 keeps e^x - 1 exact where (tau + delta) << M (the usual case: x ~ 0.05).
  return mtbf_s * std::exp(restart_s / mtbf_s) * std::expm1((interval_s + checkpoint_s) / mtbf_s) * solve_s /
         interval_s;
}

CheckpointSize checkpoint_size(const GptConfig& model, const ParallelPlan& plan)
{
  CheckpointSize size;
  const bool sharded = plan.zero_stage >= 1;
  size.writing_ranks = sharded ? plan.gpus() : plan.tp * plan.pp;
  // The dp x cp ranks that hold the same parameters, over which ZeRO shards.
  const int64_t shards = plan.dp * plan.cp;
  for (int64_t stage = 0; stage < plan.pp; ++stage) {
    const ModelStateMemory state = stage_model_state_memory(model, plan, stage);
    // Under ZeRO-1/2/3 each of them holds (and writes) its shard of the optimizer states, rounded up as the
    // memory model keeps them, and under ZeRO-3 its shard of the weights too; unsharded weights are written once
    // per (tp, pp) rank. (The gathered units and the gradients are not saved.)
    const int64_t optimizer =
        sharded ? checked_product({state.optimizer_bytes, shards}, "checkpoint size") : state.optimizer_bytes;
    const int64_t weights =
        plan.zero_stage == 3 ? checked_product({state.weight_bytes, shards}, "checkpoint size") : state.weight_bytes;
    const int64_t per_tp_rank = checked_sum(weights, optimizer, "checkpoint size");
    size.bytes = checked_sum(size.bytes, checked_product({per_tp_rank, plan.tp}, "checkpoint size"), "checkpoint size");
    size.largest_rank_bytes = std::max(size.largest_rank_bytes, state.weight_bytes + state.optimizer_bytes);
  }
  return size;
}

GoodputResult goodput(const GoodputInputs& in)
{
  if (!(in.checkpoint_s > 0) || !(in.mtbf_s > 0) || !(in.iteration_time_s > 0) || in.iterations < 1 ||
      !(in.restart_s >= 0))
    throw InputError("goodput: expected a positive checkpoint time, MTBF and iteration time, at least one "
                     "iteration and a non-negative restart time");
  GoodputResult r;
  const double delta = in.checkpoint_s, m = in.mtbf_s;
  r.solve_s = static_cast<double>(in.iterations) * in.iteration_time_s;
  r.young_interval_s = young_checkpoint_interval_s(delta, m);
  r.interval_s = daly_checkpoint_interval_s(delta, m);
  // An optimum beyond the run is no interval a job can keep: T_w(tau) falls all the way to it, so the best
  // feasible one is the whole run, one segment and one checkpoint (never a fraction of one).
  r.interval_is_the_run = r.interval_s > r.solve_s;
  if (r.interval_is_the_run)
    r.interval_s = r.solve_s;
  r.interval_iterations =
      std::max<int64_t>(1, static_cast<int64_t>(std::llround(std::min(r.interval_s / in.iteration_time_s, 9e18))));
  r.checkpoints = r.solve_s / r.interval_s;
  r.checkpoint_overhead_s = r.checkpoints * delta;
  r.failure_free_wall_s = r.solve_s + r.checkpoint_overhead_s;
  r.wall_s = daly_expected_wall_time_s(r.solve_s, r.interval_s, delta, in.restart_s, m);
  if (!std::isfinite(r.wall_s))
    throw InputError("goodput: the expected time to train overflows: the checkpoint (" + seconds(delta) +
                     ") and restart (" + seconds(in.restart_s) + ") take far longer than the job's MTBF (" +
                     seconds(m) + "), so the job almost never completes a checkpoint interval");
  r.expected_failures = r.wall_s / m;
  // A restart attempt is cut short by a failure during it: its expected length is E[min(X, R)] = M(1 - e^{-R/M}).
  r.restart_overhead_s = r.expected_failures * -m * std::expm1(-in.restart_s / m);
  r.lost_work_s = r.wall_s - r.solve_s - r.checkpoint_overhead_s - r.restart_overhead_s;
  r.goodput_fraction = r.solve_s / r.wall_s;
  return r;
}

} // namespace gputwin
