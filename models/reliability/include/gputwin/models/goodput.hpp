#pragma once
// Goodput under failures and checkpoint/restart: how much of the calendar a training job spends training.
// Plain C++ (models core). The formulas and their sources are in sim/GOODPUT.md.
//
//   job MTBF           M = (MTBF of one GPU, hours) x 3600 / GPUs            (independent exponential failures)
//   checkpoint time    delta = checkpoint bytes / aggregate write bandwidth
//   Young 1974         tau = sqrt(2 delta M)                                (first order)
//   Daly 2006          tau = sqrt(2 delta M) [1 + 1/3 sqrt(delta/2M) + 1/9 (delta/2M)] - delta  (delta < 2M), else M
//   Daly 2006          T_w = M e^{R/M} (e^{(tau + delta)/M} - 1) T_s / tau    (expected wall time, T_s failure-free)
//
// Young: J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9), 1974.
// Daly: J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps", Future
// Generation Computer Systems 22(3), 2006.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <cstdint>

namespace gputwin {

// Job MTBF in seconds: `gpus` GPUs failing independently, each with MTBF `mtbf_gpu_hours`.
// REQUIRES: mtbf_gpu_hours > 0, gpus >= 1.
double job_mtbf_s(double mtbf_gpu_hours, int64_t gpus);

// Young's first-order optimum interval of useful work between checkpoints: sqrt(2 delta M).
// REQUIRES: checkpoint_s >= 0, mtbf_s > 0.
double young_checkpoint_interval_s(double checkpoint_s, double mtbf_s);

// Daly's higher-order optimum: sqrt(2 delta M) [1 + 1/3 sqrt(delta/(2M)) + 1/9 delta/(2M)] - delta for
// delta < 2M, else M. REQUIRES: checkpoint_s >= 0, mtbf_s > 0.
double daly_checkpoint_interval_s(double checkpoint_s, double mtbf_s);

// Daly's expected wall time of a job of `solve_s` failure-free compute, checkpointing every `interval_s` of
// useful work (a checkpoint takes `checkpoint_s`), restarting in `restart_s` after each failure, failures
// exponential with mean `mtbf_s` (at any time, also during checkpoints and restarts):
// M e^{R/M} (e^{(tau + delta)/M} - 1) T_s / tau. Infinite where it overflows a double.
// REQUIRES: solve_s >= 0, interval_s > 0, checkpoint_s >= 0, restart_s >= 0, mtbf_s > 0.
double daly_expected_wall_time_s(double solve_s, double interval_s, double checkpoint_s, double restart_s,
                                 double mtbf_s);

// What one checkpoint writes: every rank's weights (2 bytes per parameter) and optimizer states (fp32 master
// weights + Adam moments, 12 bytes per parameter) from the memory model. Gradients are not saved. One data-
// parallel replica writes the weights; the optimizer states are written by that replica, or by every one of the
// dp x cp ranks its own shard under ZeRO-1/2/3 (ZeRO-3: its shard of the weights too; --fsdp keeps no BF16
// weights, its FP32 parameters are the optimizer's master weights).
struct CheckpointSize {
  int64_t bytes = 0;              // the whole job's checkpoint
  int64_t largest_rank_bytes = 0; // weights + optimizer states of the busiest writing rank (memory model)
  int64_t writing_ranks = 0;      // tp x pp, or tp x cp x pp x dp under ZeRO-1/2/3
};

// REQUIRES: validate_plan(model, plan) passed.
CheckpointSize checkpoint_size(const GptConfig& model, const ParallelPlan& plan);

struct GoodputInputs {
  double iteration_time_s = 0; // failure-free, from the simulator
  int64_t iterations = 0;      // to train on the requested tokens
  double checkpoint_s = 0;     // delta
  double restart_s = 0;        // R: detect, reschedule, reload the checkpoint, warm up
  double mtbf_s = 0;           // M, of the whole job
};

struct GoodputResult {
  double solve_s = 0;               // T_s = iterations x iteration time: no failures, no checkpoints
  double young_interval_s = 0;      // sqrt(2 delta M)
  double interval_s = 0;            // tau: Daly's higher-order optimum (used below), at most T_s
  bool interval_is_the_run = false; // Daly's optimum exceeds T_s: tau = T_s, one checkpoint (sim/GOODPUT.md)
  int64_t interval_iterations = 0;  // tau in whole iterations, at least 1 (where a job would checkpoint)
  double checkpoints = 0;           // T_s / tau (at least 1)
  double failure_free_wall_s = 0;   // T_s + checkpoints x delta: checkpointing, no failures
  double wall_s = 0;                // T_w: expected time to train
  double expected_failures = 0;     // T_w / M; each one is a restart
  double checkpoint_overhead_s = 0; // checkpoints x delta (completed checkpoints)
  double restart_overhead_s = 0;    // expected failures x M (1 - e^{-R/M}) (restarts can fail too)
  double lost_work_s = 0;           // T_w - T_s - checkpoint - restart: work (and checkpoints) redone
  double goodput_fraction = 0;      // T_s / T_w
};

// REQUIRES: iteration_time_s > 0, iterations >= 1, checkpoint_s >= 0, restart_s >= 0, mtbf_s > 0.
// Throws InputError when the expected wall time overflows (restart and checkpoint far beyond the MTBF).
GoodputResult goodput(const GoodputInputs& in);

} // namespace gputwin
