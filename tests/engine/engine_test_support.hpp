#pragma once
// Shared by the engine tests: the tiny model every numerics and memory test trains, plans built from a few
// fields, and the per-tensor comparison of gradients against the single-rank reference.

#include "gputwin/engine/train/trainer.hpp"
#include "llama_test_model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

namespace gputwin::engine::testing {

// Tiny GPT: h 64, a 4 (head_dim 16), L 4, s 16, v 128.
// The engine's end-to-end training run: 4 layers, hidden 128, 4 heads, tp 2, pp 2, SP, selective, 1F1B,
// micro-batch 2, global batch 8, Adam at 3e-3 (as gputwin-engine train), for `steps` steps.
inline TrainConfig small_tp2_pp2_sp_selective(int64_t steps)
{
  TrainConfig config;
  config.model = GptConfig{"small", 128, 4, 4, 64, 128};
  config.plan.tp = 2;
  config.plan.pp = 2;
  config.plan.tp_comm = TpComm::SequenceParallel;
  config.plan.recompute = Recompute::Selective;
  config.plan.schedule = Schedule::OneFOneB;
  config.plan.micro_batch = 2;
  config.plan.global_batch = 8;
  validate_plan(config.model, config.plan);
  config.options.adam.learning_rate = 3e-3f;
  config.steps = steps;
  return config;
}

// The same run with the small model Llama-style (grouped-query attention with 2 K/V
// groups, SwiGLU, RMSNorm, rotary positions; the flags of `gputwin-engine train --num-query-groups 2 --activation
// swiglu --norm rmsnorm --position rope`), the same plan and optimizer.
inline TrainConfig small_llama_tp2_pp2_sp_selective(int64_t steps)
{
  TrainConfig config = small_tp2_pp2_sp_selective(steps);
  config.model.name = "small-llama";
  config.model.query_groups = 2;
  config.model.activation = Activation::SwiGlu;
  config.model.norm = Norm::RmsNorm;
  config.model.position = PositionEmbedding::Rope;
  validate_plan(config.model, config.plan);
  return config;
}

inline GptConfig tiny_model()
{
  GptConfig m;
  m.name = "tiny";
  m.hidden = 64;
  m.heads = 4;
  m.layers = 4;
  m.seq_len = 16;
  m.vocab = 128;
  return m;
}

struct PlanSpec {
  int64_t tp = 1, pp = 1, dp = 1;
  bool sp = false;
  Recompute recompute = Recompute::None;
  Schedule schedule = Schedule::OneFOneB;
  int64_t chunks = 1;
  int64_t micro_batch = 1;
  int64_t global_batch = 4;
  int zero = 0;
  AttentionKernel attention = AttentionKernel::Unfused;
  int64_t first_stage_layers = 0; // uneven pipeline stages; 0: even
};

inline ParallelPlan make_plan(const PlanSpec& s)
{
  ParallelPlan p;
  p.tp = s.tp;
  p.pp = s.pp;
  p.dp = s.dp;
  p.tp_comm = s.sp ? TpComm::SequenceParallel : TpComm::AllReduce;
  p.recompute = s.recompute;
  p.schedule = s.schedule;
  p.chunks = s.chunks;
  p.micro_batch = s.micro_batch;
  p.global_batch = s.global_batch;
  p.zero_stage = s.zero;
  p.attention = s.attention;
  p.pp_first_stage_layers = s.first_stage_layers;
  return p;
}

inline std::string describe(const PlanSpec& s)
{
  return "tp" + std::to_string(s.tp) + (s.sp ? "+sp" : "") + " pp" + std::to_string(s.pp) + " dp" +
         std::to_string(s.dp) + " " + to_string(s.recompute) + " " + to_string(s.schedule) +
         (s.chunks > 1 ? "x" + std::to_string(s.chunks) : "") + " zero" + std::to_string(s.zero) +
         (s.attention == AttentionKernel::Flash ? " flash" : "") +
         (s.first_stage_layers > 0 ? " first-stage" + std::to_string(s.first_stage_layers) : "");
}

// How gtest prints a PlanSpec in parameterised test names: the plan, not the struct's bytes (which include
// uninitialised padding and change between listings).
inline void PrintTo(const PlanSpec& s, std::ostream* out)
{
  *out << describe(s) << " b" << s.micro_batch << " B" << s.global_batch;
}

// The tiny GPT as a Llama-style model (llama_test_model.hpp), SwiGLU of width 160 (a multiple of 4 tp ranks).
inline GptConfig tiny_llama_model()
{
  GptConfig m = gputwin::with_llama_layers(tiny_model(), 160);
  m.name = "tiny-llama";
  return m;
}

inline TrainResult run_model(const GptConfig& model, const PlanSpec& spec, int64_t steps, bool gradients,
                             bool weights = false, bool trace = false, BackendKind backend = BackendKind::Cpu)
{
  TrainConfig config;
  config.backend = backend;
  config.model = model;
  config.plan = make_plan(spec);
  validate_plan(config.model, config.plan);
  config.options.dropout = 0.1f; // used only where the model has dropout
  config.steps = steps;
  config.capture_gradients = gradients;
  config.capture_weights = weights;
  config.record_trace = trace;
  return train(config);
}

inline TrainResult run_tiny(const PlanSpec& spec, int64_t steps, bool gradients, bool weights = false,
                            bool trace = false, BackendKind backend = BackendKind::Cpu)
{
  TrainConfig config;
  config.backend = backend;
  config.model = tiny_model();
  config.plan = make_plan(spec);
  validate_plan(config.model, config.plan);
  config.options.dropout = 0.1f;
  config.steps = steps;
  config.capture_gradients = gradients;
  config.capture_weights = weights;
  config.record_trace = trace;
  return train(config);
}

// ||a - b|| / ||b|| over the elements of one tensor.
inline double relative_l2_error(const std::vector<float>& a, const std::vector<float>& b)
{
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return norm == 0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}

// A plan's first-step loss and every gradient against the one-rank reference run `ref`: the loss within
// `loss_tolerance` (relative), each gradient within `gradient_tolerance` (relative L2); prints the worst gradient.
inline void expect_same_training(const TrainResult& run, const TrainResult& ref, const std::string& label,
                                 double loss_tolerance, double gradient_tolerance)
{
  ASSERT_EQ(run.gradients.size(), ref.gradients.size()) << label;
  const double loss_error = std::abs(run.loss_per_step[0] - ref.loss_per_step[0]) / ref.loss_per_step[0];
  EXPECT_LE(loss_error, loss_tolerance) << label << ": loss " << run.loss_per_step[0] << " vs " << ref.loss_per_step[0];
  double worst = 0;
  std::string worst_name;
  for (size_t i = 0; i < ref.gradients.size(); ++i) {
    const LogicalTensor& g = run.gradients[i];
    const LogicalTensor& r = ref.gradients[i];
    ASSERT_EQ(g.name, r.name);
    ASSERT_EQ(g.values.size(), r.values.size()) << g.name;
    const double error = relative_l2_error(g.values, r.values);
    EXPECT_LE(error, gradient_tolerance) << label << ": gradient of " << g.name;
    if (error > worst) {
      worst = error;
      worst_name = g.name;
    }
  }
  std::printf("  %-40s loss error %.2e, worst gradient error %.2e (%s)\n", label.c_str(), loss_error, worst,
              worst_name.c_str());
}

} // namespace gputwin::engine::testing
