// Goodput under failures (models/goodput.hpp): Young's first-order interval derived by hand, Daly's
// higher-order optimum against a numerical minimum of his wall-time model, the wall time against a direct
// simulation of the failure process, the accounting of lost time, and the checkpoint size.
#include "gputwin/models/goodput.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/parameter_count.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace gputwin {
namespace {

// The tau minimising Daly's T_w (golden-section search on a unimodal function).
double numerical_optimum_s(double checkpoint_s, double restart_s, double mtbf_s)
{
  const auto wall = [&](double tau) { return daly_expected_wall_time_s(1e7, tau, checkpoint_s, restart_s, mtbf_s); };
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double a = 1e-3, b = 10 * mtbf_s;
  double c = b - phi * (b - a), d = a + phi * (b - a);
  for (int i = 0; i < 300; ++i) {
    if (wall(c) < wall(d))
      b = d;
    else
      a = c;
    c = b - phi * (b - a);
    d = a + phi * (b - a);
  }
  return (a + b) / 2;
}

TEST(Goodput, JobMtbfIsTheGpuMtbfOverTheGpus)
{
  // The check: 50000 GPU-hours over 1024 GPUs.
  EXPECT_DOUBLE_EQ(job_mtbf_s(50000, 1024), 50000.0 * 3600 / 1024); // 175781.25 s, 48.8 h
  EXPECT_DOUBLE_EQ(job_mtbf_s(1, 1), 3600);
}

// Daly's first-order result by hand. With R = 0 and x = (tau + delta)/M small, e^x - 1 = x + x^2/2 + O(x^3), so
//   T_w / T_s = M (e^x - 1) / tau = (tau + delta)/tau * (1 + (tau + delta)/(2M) + ...)
//             = 1 + delta/tau + tau/(2M) + delta/M + O(delta^2/(tau M)) ...
// d/dtau: -delta/tau^2 + 1/(2M) = 0  =>  tau = sqrt(2 delta M) (Young 1974), and the waste at the optimum
// delta/tau + tau/(2M) = sqrt(2 delta / M).
TEST(Goodput, DalysFirstOrderResultByHand)
{
  const double delta = 245.0, m = 175781.25; // 2.45 TB at 10 GB/s; the job MTBF above
  const double by_hand = 9280.7765;          // sqrt(2 x 245 x 175781.25) = sqrt(86132812.5)
  EXPECT_NEAR(young_checkpoint_interval_s(delta, m), by_hand, 1e-3);

  // The numerical optimum of Daly's full model agrees with sqrt(2 delta M) to first order: the relative
  // difference is O(sqrt(delta / M)) (here sqrt(delta/(2M)) = 0.026), and it vanishes as delta / M -> 0.
  const double optimum = numerical_optimum_s(delta, 0, m);
  EXPECT_NEAR(optimum / by_hand, 1.0, std::sqrt(delta / (2 * m)));
  for (const double small : {1e-4, 1e-6, 1e-8}) {
    SCOPED_TRACE(small);
    const double d = small * m;
    EXPECT_NEAR(numerical_optimum_s(d, 0, m) / young_checkpoint_interval_s(d, m), 1.0, 2 * std::sqrt(small / 2));
  }
  // The first-order waste at the optimum: 1 - goodput = sqrt(2 delta / M) to first order.
  const double waste = 1 - 1e7 / daly_expected_wall_time_s(1e7, by_hand, delta, 0, m);
  EXPECT_NEAR(waste / std::sqrt(2 * delta / m), 1.0, 2 * std::sqrt(delta / m));
}

TEST(Goodput, DalysHigherOrderOptimumIsTheMinimumOfHisModel)
{
  for (const double ratio : {1e-4, 1e-3, 1e-2, 0.1, 0.5}) { // delta / M
    SCOPED_TRACE(ratio);
    const double m = 100000, delta = ratio * m;
    const double daly = daly_checkpoint_interval_s(delta, m), young = young_checkpoint_interval_s(delta, m);
    // Daly's closed form by hand.
    const double r = delta / (2 * m);
    EXPECT_DOUBLE_EQ(daly, std::sqrt(2 * delta * m) * (1 + std::sqrt(r) / 3 + r / 9) - delta);
    // Closer to the true minimum than Young's, and the wall time there within 1e-4 of the minimum's (the
    // restart time does not move the optimum: e^{R/M} is a constant factor).
    for (const double restart : {0.0, 0.3 * m}) {
      const double optimum = numerical_optimum_s(delta, restart, m);
      EXPECT_LE(std::abs(daly - optimum), std::abs(young - optimum) + 1e-6 * optimum);
      const double best = daly_expected_wall_time_s(1e7, optimum, delta, restart, m);
      EXPECT_NEAR(daly_expected_wall_time_s(1e7, daly, delta, restart, m) / best, 1.0, 1e-4);
    }
  }
  // delta >= 2M: Daly's optimum is M.
  EXPECT_DOUBLE_EQ(daly_checkpoint_interval_s(300, 100), 100);
  EXPECT_DOUBLE_EQ(daly_checkpoint_interval_s(200, 100), 100);
}

// The wall-time model against a direct simulation of its process: segments of tau work + delta checkpoint;
// a failure (exponential, mean M, at any time) loses the segment in progress and costs a restart of R, during
// which another failure can strike (and starts the restart over).
TEST(Goodput, WallTimeMatchesASimulationOfTheFailureProcess)
{
  const double m = 1000, tau = 300, delta = 40, restart = 100;
  const int segments = 200000;
  std::mt19937_64 random(12345);
  std::exponential_distribution<double> failure(1 / m);
  double wall = 0, restart_time = 0;
  int64_t failures = 0;
  for (int s = 0; s < segments; ++s) {
    bool restarting = false;
    while (true) {
      const double need = (restarting ? restart : 0) + tau + delta;
      const double x = failure(random);
      if (x >= need) {
        wall += need;
        restart_time += restarting ? restart : 0;
        break;
      }
      wall += x;
      restart_time += restarting ? std::min(x, restart) : 0;
      ++failures;
      restarting = true;
    }
  }
  const double model = daly_expected_wall_time_s(segments * tau, tau, delta, restart, m);
  EXPECT_NEAR(wall / model, 1.0, 0.01);
  EXPECT_NEAR(static_cast<double>(failures) / (model / m), 1.0, 0.01) << "failures = T_w / M";
  EXPECT_NEAR(restart_time / ((model / m) * m * (1 - std::exp(-restart / m))), 1.0, 0.01);
}

TEST(Goodput, LostTimeAddsUpAndLostWorkIsIndependentOfTheRestart)
{
  GoodputInputs in;
  in.iteration_time_s = 19.9;
  in.iterations = 95368;
  in.checkpoint_s = 245;
  in.restart_s = 600;
  in.mtbf_s = 175781.25;
  const GoodputResult g = goodput(in);
  EXPECT_DOUBLE_EQ(g.solve_s, 95368 * 19.9);
  EXPECT_DOUBLE_EQ(g.young_interval_s, std::sqrt(2 * 245 * 175781.25));
  EXPECT_DOUBLE_EQ(g.interval_s, daly_checkpoint_interval_s(245, 175781.25));
  EXPECT_EQ(g.interval_iterations, std::llround(g.interval_s / 19.9));
  EXPECT_DOUBLE_EQ(g.checkpoints, g.solve_s / g.interval_s);
  EXPECT_NEAR(g.solve_s + g.checkpoint_overhead_s + g.restart_overhead_s + g.lost_work_s, g.wall_s, 1e-6 * g.wall_s);
  EXPECT_DOUBLE_EQ(g.expected_failures, g.wall_s / in.mtbf_s);
  EXPECT_DOUBLE_EQ(g.goodput_fraction, g.solve_s / g.wall_s);
  EXPECT_GT(g.goodput_fraction, 0.9);
  EXPECT_LT(g.goodput_fraction, 1.0);
  // Per checkpoint interval the work redone is M (e^{(tau+delta)/M} - 1) - (tau + delta) ~ (tau+delta)^2/(2M),
  // whatever the restart costs.
  const double a = g.interval_s + in.checkpoint_s;
  EXPECT_NEAR(g.lost_work_s / (g.checkpoints * (in.mtbf_s * std::expm1(a / in.mtbf_s) - a)), 1.0, 1e-9);
  GoodputInputs slow_restart = in;
  slow_restart.restart_s = 6000;
  EXPECT_NEAR(goodput(slow_restart).lost_work_s / g.lost_work_s, 1.0, 1e-9);
  EXPECT_GT(goodput(slow_restart).wall_s, g.wall_s);
  // No failures in sight (M -> infinity): the wall time is the failure-free time with checkpoints.
  GoodputInputs reliable = in;
  reliable.mtbf_s = 1e15;
  const GoodputResult r = goodput(reliable);
  EXPECT_NEAR(r.wall_s / r.failure_free_wall_s, 1.0, 1e-4);
  EXPECT_LT(r.expected_failures, 1e-5);
}

// Daly's optimum longer than the run (issue 30: 0.2 checkpoints were reported): the interval is the whole run,
// one checkpoint, and that is the best wall time over every interval a job can keep (tau <= T_s).
TEST(Goodput, AnOptimumLongerThanTheRunIsClampedToTheRun)
{
  GoodputInputs in;
  in.iteration_time_s = 1;
  in.iterations = 100; // T_s = 100 s
  in.checkpoint_s = 10;
  in.restart_s = 60;
  in.mtbf_s = 1e6; // Daly's optimum ~ 4460 s
  ASSERT_GT(daly_checkpoint_interval_s(in.checkpoint_s, in.mtbf_s), 100);
  const GoodputResult r = goodput(in);
  EXPECT_TRUE(r.interval_is_the_run);
  EXPECT_DOUBLE_EQ(r.interval_s, 100);
  EXPECT_DOUBLE_EQ(r.checkpoints, 1);
  EXPECT_EQ(r.interval_iterations, 100);
  EXPECT_DOUBLE_EQ(r.checkpoint_overhead_s, 10);
  EXPECT_DOUBLE_EQ(r.wall_s, daly_expected_wall_time_s(100, 100, 10, 60, 1e6));
  for (const double shorter : {99.0, 50.0, 10.0, 1.0})
    EXPECT_LT(r.wall_s, daly_expected_wall_time_s(100, shorter, 10, 60, 1e6)) << shorter;
  in.iterations = 1000000; // a long run keeps Daly's optimum
  EXPECT_FALSE(goodput(in).interval_is_the_run);
  EXPECT_DOUBLE_EQ(goodput(in).interval_s, daly_checkpoint_interval_s(10, 1e6));
}

TEST(Goodput, BadInputsAndOverflowAreInputErrors)
{
  EXPECT_THROW(goodput({1, 10, 0, 0, 100}), InputError);  // no checkpoint time
  EXPECT_THROW(goodput({1, 10, 1, -1, 100}), InputError); // negative restart
  EXPECT_THROW(goodput({1, 10, 1, 0, 0}), InputError);    // MTBF 0
  EXPECT_THROW(goodput({1, 0, 1, 0, 100}), InputError);   // no iterations
  EXPECT_THROW(goodput({1, 10, 1, 1e6, 1}), InputError);  // e^{R/M} overflows
}

TEST(Goodput, CheckpointIsWeightsAndOptimizerStatesOfEveryRank)
{
  const GptConfig& gpt3 = find_catalog_model("gpt3-175b")->model;
  // One GPU: 14 bytes per parameter (2 bf16 weights + 12 fp32 master weights and Adam moments; no gradients).
  ParallelPlan one;
  const CheckpointSize single = checkpoint_size(gpt3, one);
  EXPECT_EQ(single.bytes, 14 * model_parameters(gpt3, 1));
  EXPECT_EQ(single.largest_rank_bytes, single.bytes);
  EXPECT_EQ(single.writing_ranks, 1);
  // Data parallelism does not grow it (one replica writes); ZeRO-1 spreads the optimizer states over every
  // replica (each writes its shard, rounded up as the memory model keeps it).
  ParallelPlan plan;
  plan.tp = 8;
  plan.pp = 8;
  plan.dp = 4;
  const CheckpointSize replicated = checkpoint_size(gpt3, plan);
  EXPECT_EQ(replicated.writing_ranks, 64);
  int64_t expected = 0;
  for (int64_t stage = 0; stage < 8; ++stage)
    expected += 8 * 14 * stage_parameters_per_gpu(gpt3, plan, stage);
  EXPECT_EQ(replicated.bytes, expected);
  // Replicated layernorms and biases on each tp rank and the tied output embedding on the last stage make it
  // a little larger than 14 bytes x the model's parameters.
  EXPECT_NEAR(static_cast<double>(replicated.bytes) / (14.0 * static_cast<double>(model_parameters(gpt3, 8))), 1.0,
              0.01);
  plan.zero_stage = 1;
  const CheckpointSize sharded = checkpoint_size(gpt3, plan);
  EXPECT_EQ(sharded.writing_ranks, 256);
  EXPECT_NEAR(static_cast<double>(sharded.bytes) / static_cast<double>(replicated.bytes), 1.0, 1e-6);
  EXPECT_LT(sharded.largest_rank_bytes, replicated.largest_rank_bytes);
}

TEST(Goodput, ShardedCheckpointsWriteTheWholeModelOnce)
{
  // llama3-8b on dp 4 x cp 2 (p = 1): whatever the ZeRO stage, the job writes 14 bytes per parameter (BF16 weights
  // + FP32 master weights and Adam moments), every one of the 8 ranks that share the parameters its shard; FSDP2
  // keeps no BF16 copy: 12 (its FP32 parameters are the master weights).
  const GptConfig& llama = find_catalog_model("llama3-8b")->model;
  ParallelPlan plan;
  plan.dp = 4;
  plan.cp = 2;
  plan.attention = AttentionKernel::Flash;
  const int64_t params = model_parameters(llama, 1);
  ASSERT_EQ(params % 8, 0);
  EXPECT_EQ(checkpoint_size(llama, plan).bytes, 14 * params);
  for (const int zero : {1, 2, 3}) {
    plan.zero_stage = zero;
    const CheckpointSize size = checkpoint_size(llama, plan);
    EXPECT_EQ(size.bytes, 14 * params) << zero;
    EXPECT_EQ(size.writing_ranks, 8) << zero;
    EXPECT_EQ(size.largest_rank_bytes, (zero == 3 ? 14 : 2 * 8 + 12) * params / 8) << zero;
  }
  plan.fsdp = true;
  EXPECT_EQ(checkpoint_size(llama, plan).bytes, 12 * params);
}

} // namespace
} // namespace gputwin
