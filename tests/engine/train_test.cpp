// End-to-end training: a small GPT (4 layers, h 128, 4 heads) with tp 2, pp 2, sequence parallelism,
// selective recompute and 1F1B trains 50 steps on the synthetic corpus in well under two minutes on two cores,
// at least halves its loss, and writes a trace the reader validates. The same model Llama-style (GQA, SwiGLU,
// RMSNorm, RoPE) under the same plan halves its loss too and tracks the single-rank run of the same model.
#include "engine_test_support.hpp"
#include "gputwin/engine/train/trainer.hpp"
#include "gputwin/models/pipeline_schedule.hpp"
#include "gputwin/traces/trace_io.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>

namespace gputwin::engine {
namespace {

TEST(EngineTraining, FiftyStepsHalveTheLossAndTheTraceValidates)
{
  TrainConfig config = testing::small_tp2_pp2_sp_selective(50);
  config.record_trace = true;

  const auto start = std::chrono::steady_clock::now();
  const TrainResult result = train(config);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 120.0);
  ASSERT_EQ(result.loss_per_step.size(), 50u);
  std::printf("  loss %.4f -> %.4f in %.1f s\n", result.loss_per_step.front(), result.loss_per_step.back(), seconds);
  EXPECT_NEAR(result.loss_per_step.front(), std::log(128.0), 0.3); // uniform at initialisation
  EXPECT_LE(result.loss_per_step.back(), 0.5 * result.loss_per_step.front());
  ASSERT_EQ(result.iteration_seconds.size(), 50u);
  for (const double s : result.iteration_seconds)
    EXPECT_GT(s, 0.0);

  // The trace: written, read back (validated on load), byte-identical when written again.
  const std::string path = test_temp_path("trace.json");
  traces::write_op_graph_file(path, result.trace);
  const traces::OpGraph loaded = traces::read_op_graph_file(path);
  EXPECT_EQ(traces::op_graph_to_json(loaded), traces::op_graph_to_json(result.trace));
  ASSERT_EQ(loaded.ranks.size(), 4u);
  EXPECT_EQ(loaded.metadata.at("device"), "cpu");
  EXPECT_EQ(loaded.metadata.at("recompute"), "selective");
  EXPECT_EQ(loaded.measured_iteration_s.size(), 50u);

  // Every op is measured; each phase and kind appears; the first stage runs 4 forwards and 4 backwards of
  // its 2 layers in the 1F1B order of models/pipeline_schedule.
  std::set<std::string> kinds, phases;
  for (const traces::RankProgram& r : loaded.ranks)
    for (const traces::Op& op : r.ops) {
      EXPECT_GE(op.start_ns, 0);
      EXPECT_GE(op.duration_ns, 0);
      kinds.insert(traces::to_string(op.kind));
      phases.insert(traces::to_string(op.phase));
    }
  EXPECT_EQ(kinds, (std::set<std::string>{"collective", "compute", "recv", "send"}));
  EXPECT_EQ(phases, (std::set<std::string>{"backward", "forward", "optimizer", "recompute"}));
  std::string order;
  int32_t last_micro_batch = -2;
  traces::Phase last_phase = traces::Phase::Optimizer;
  for (const traces::Op& op : loaded.ranks[0].ops) {
    if (op.kind != traces::OpKind::Compute || op.micro_batch < 0 || op.phase == traces::Phase::Recompute)
      continue;
    if (op.micro_batch == last_micro_batch && op.phase == last_phase)
      continue;
    last_micro_batch = op.micro_batch;
    last_phase = op.phase;
    order += std::string(order.empty() ? "" : " ") + (op.phase == traces::Phase::Forward ? "F" : "B") +
             std::to_string(op.micro_batch);
  }
  EXPECT_EQ(order, format_schedule(stage_schedule(pipeline_shape(config.plan), 0), false));
}

TEST(EngineTraining, LlamaStyleFiftyStepsHalveTheLossAndTrackTheSingleRankRun)
{
  const TrainConfig config = testing::small_llama_tp2_pp2_sp_selective(50);
  const TrainResult result = train(config);
  ASSERT_EQ(result.loss_per_step.size(), 50u);
  std::printf("  llama-style tp 2 pp 2 SP selective: loss %.4f -> %.4f\n", result.loss_per_step.front(),
              result.loss_per_step.back());
  EXPECT_NEAR(result.loss_per_step.front(), std::log(128.0), 0.3);
  EXPECT_LE(result.loss_per_step.back(), 0.5 * result.loss_per_step.front());

  // The same model on one rank (micro-batch 2, global batch 8): the plan reorders fp32 sums only, so the first
  // steps agree as the GPT plans' do (numerics_test.cpp TrainingStepsAgreeAcrossPlans, 1e-2 relative).
  TrainConfig single = config;
  single.plan = ParallelPlan{};
  single.plan.micro_batch = 2;
  single.plan.global_batch = 8;
  single.steps = 10;
  const TrainResult one = train(single);
  double worst = 0;
  for (size_t i = 0; i < one.loss_per_step.size(); ++i) {
    const double error = std::abs(result.loss_per_step[i] - one.loss_per_step[i]) / one.loss_per_step[i];
    EXPECT_LT(error, 1e-2) << "step " << i + 1 << ": " << result.loss_per_step[i] << " vs " << one.loss_per_step[i];
    worst = std::max(worst, error);
  }
  std::printf("  first 10 steps vs one rank: worst relative loss difference %.2e\n", worst);
}

} // namespace
} // namespace gputwin::engine
