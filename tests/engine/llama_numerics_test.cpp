// Whole-step numerics of a Llama-style model (tiny_llama_model: grouped-query attention, SwiGLU, RMSNorm, rotary
// positions, no biases, no dropout, untied output layer): every parallel plan against the single-rank run of the
// same model on the same global batch, as numerics_test.cpp holds the GPT, with its tolerances and reasons
// (loss 1e-5, gradients 1e-2 relative L2: reordered fp32 sums that flip a bf16 rounding, never more). What these
// plans exercise beyond the GPT: the QKV weight split into whole query heads and whole K/V groups per rank, the
// gate and up halves of fc1 split alike, RoPE at the same positions on every SP shard, the untied output matrix on
// the last stage, RMSNorm's gamma alone in the SP gradient all-reduce, uneven pipeline stages. Recompute reruns
// the same kernels on the same bf16 inputs: bit-identical gradients.
#include "engine_test_support.hpp"

#include "gputwin/engine/train/engine_plan_support.hpp"
#include "gputwin/common/input_error.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>

namespace gputwin::engine::testing {
namespace {

constexpr double loss_relative_tolerance = 1e-5;
constexpr double gradient_relative_l2_tolerance = 1e-2;

// The single-rank run on the same global batch, with the same attention kernel (flash differs from unfused by
// bf16 rounding of the probabilities, numerics_test.cpp FlashNumerics).
const TrainResult& llama_reference(int64_t global_batch, AttentionKernel attention)
{
  static std::map<std::pair<int64_t, AttentionKernel>, TrainResult> results;
  const auto key = std::make_pair(global_batch, attention);
  auto it = results.find(key);
  if (it == results.end())
    it = results
             .emplace(key, run_model(tiny_llama_model(),
                                     PlanSpec{.global_batch = global_batch, .attention = attention}, 1, true))
             .first;
  return it->second;
}

// The worst relative L2 gradient error of `run` against `ref` (and its tensor), checking names and the bounds.
double expect_close(const TrainResult& run, const TrainResult& ref, const std::string& what, std::string& worst_name)
{
  EXPECT_EQ(run.gradients.size(), ref.gradients.size()) << what;
  EXPECT_LE(std::abs(run.loss_per_step[0] - ref.loss_per_step[0]) / ref.loss_per_step[0], loss_relative_tolerance)
      << what << ": loss " << run.loss_per_step[0] << " vs " << ref.loss_per_step[0];
  double worst = 0;
  for (size_t i = 0; i < std::min(run.gradients.size(), ref.gradients.size()); ++i) {
    EXPECT_EQ(run.gradients[i].name, ref.gradients[i].name);
    const double error = relative_l2_error(run.gradients[i].values, ref.gradients[i].values);
    EXPECT_LE(error, gradient_relative_l2_tolerance) << what << ": gradient of " << run.gradients[i].name;
    if (error > worst) {
      worst = error;
      worst_name = run.gradients[i].name;
    }
  }
  return worst;
}

TEST(LlamaNumerics, ReferenceHasTheLlamaParametersAndAFiniteLoss)
{
  const TrainResult& ref = llama_reference(4, AttentionKernel::Unfused);
  // Per layer: ln1.gamma, qkv.weight, proj.weight, ln2.gamma, fc1.weight, fc2.weight (no biases, no betas); then
  // the word embedding, the untied output matrix and the final norm's gamma (no position table with RoPE).
  std::map<std::string, size_t> sizes;
  for (const LogicalTensor& g : ref.gradients)
    sizes[g.name] = g.values.size();
  EXPECT_EQ(ref.gradients.size(), 4u * 6u + 3u);
  const GptConfig m = tiny_llama_model();
  EXPECT_EQ(sizes.at("layers.0.qkv.weight"), static_cast<size_t>(m.hidden * (m.hidden + 2 * m.kv_dim())));
  EXPECT_EQ(sizes.at("layers.0.fc1.weight"), static_cast<size_t>(m.hidden * 2 * m.ffn()));
  EXPECT_EQ(sizes.at("layers.0.fc2.weight"), static_cast<size_t>(m.ffn() * m.hidden));
  EXPECT_EQ(sizes.count("output.weight"), 1u);
  EXPECT_EQ(sizes.count("embedding.position"), 0u);
  EXPECT_EQ(sizes.count("layers.0.ln1.beta"), 0u);
  EXPECT_NEAR(ref.loss_per_step[0], std::log(128.0), 0.3);
  for (const LogicalTensor& g : ref.gradients)
    EXPECT_GT(relative_l2_error(g.values, std::vector<float>(g.values.size(), 0.0f)), 0.0) << g.name << " is all 0";
}

class LlamaPlanNumerics : public ::testing::TestWithParam<PlanSpec> {};

TEST_P(LlamaPlanNumerics, MatchesSingleRankAndRecomputeIsBitIdentical)
{
  PlanSpec spec = GetParam();
  const Recompute asked = spec.recompute;
  spec.recompute = Recompute::None;
  const TrainResult none = run_model(tiny_llama_model(), spec, 1, true);
  std::string worst_name;
  const double worst =
      expect_close(none, llama_reference(spec.global_batch, spec.attention), describe(spec), worst_name);
  const TrainResult& ref = llama_reference(spec.global_batch, spec.attention);
  std::printf("  %-40s loss error %.2e, worst gradient error %.2e (%s)\n", describe(spec).c_str(),
              std::abs(none.loss_per_step[0] - ref.loss_per_step[0]) / ref.loss_per_step[0], worst, worst_name.c_str());
  for (const Recompute mode : {asked, Recompute::Full}) {
    if (mode == Recompute::None)
      continue;
    spec.recompute = mode;
    const TrainResult recomputed = run_model(tiny_llama_model(), spec, 1, true);
    EXPECT_EQ(recomputed.loss_per_step, none.loss_per_step) << describe(spec);
    for (size_t i = 0; i < none.gradients.size(); ++i)
      EXPECT_EQ(0, std::memcmp(recomputed.gradients[i].values.data(), none.gradients[i].values.data(),
                               none.gradients[i].values.size() * sizeof(float)))
          << describe(spec) << ": gradient of " << none.gradients[i].name << " differs from recompute none";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Grid, LlamaPlanNumerics,
    ::testing::Values(PlanSpec{.tp = 2, .pp = 2, .sp = true, .recompute = Recompute::Selective}, // the plan
                      PlanSpec{.tp = 2},                                 // plain TP: whole groups per rank
                      PlanSpec{.tp = 2, .sp = true},                     // SP: RoPE on the gathered sequence
                      PlanSpec{.tp = 2, .dp = 2, .sp = true},            // DP
                      PlanSpec{.pp = 2, .first_stage_layers = 1},        // uneven stages: 1 + 3 layers
                      PlanSpec{.tp = 2, .pp = 2, .sp = true, .attention = AttentionKernel::Flash},
                      PlanSpec{.tp = 2, .sp = true, .micro_batch = 2, .global_batch = 8}));

TEST(LlamaNumerics, FourTensorRanksSplitTwoGroupsIsRefusedInOneLine)
{
  // 2 K/V groups cannot be split over 4 tensor-parallel ranks (each rank must hold whole groups).
  TrainConfig config;
  config.model = tiny_llama_model();
  config.plan = make_plan(PlanSpec{.tp = 4});
  try {
    validate_plan(config.model, config.plan);
    ADD_FAILURE() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--num-query-groups"), std::string::npos) << e.what();
  }
}

TEST(LlamaNumerics, LearnedPositionsWithoutDropoutMatchTheSingleRankRun)
{
  // The positions are added by tp rank 0 inside embedding.fwd when no dropout op follows the reduction: with
  // SP the sum of two bf16 terms must still equal the single rank's word + position.
  GptConfig m = tiny_model();
  m.dropout = false;
  m.tie_embeddings = true;
  const TrainResult ref = run_model(m, PlanSpec{}, 1, true);
  for (const PlanSpec& spec : {PlanSpec{.tp = 2, .sp = true}, PlanSpec{.tp = 2, .pp = 2}}) {
    std::string worst_name;
    expect_close(run_model(m, spec, 1, true), ref, describe(spec) + " learned positions, no dropout", worst_name);
  }
}

TEST(LlamaNumerics, SquaredReluAndInterleavedUnevenStagesMatchTheSingleRankRun)
{
  // Nemotron-style layers (squared ReLU, LayerNorm) on 5 layers: TP + SP, and the interleaved schedule with an
  // uneven first stage of 3 layers over its 2 chunks (1 + 2) before a last stage of 2 (1 + 1).
  GptConfig m = tiny_llama_model();
  m.activation = Activation::SquaredRelu;
  m.norm = Norm::LayerNorm;
  m.layers = 5;
  const TrainResult ref = run_model(m, PlanSpec{}, 1, true);
  for (const PlanSpec& spec :
       {PlanSpec{.tp = 2, .sp = true},
        PlanSpec{.pp = 2, .schedule = Schedule::Interleaved, .chunks = 2, .first_stage_layers = 3}}) {
    std::string worst_name;
    expect_close(run_model(m, spec, 1, true), ref, describe(spec) + " squared relu", worst_name);
  }
}

TEST(LlamaNumerics, PlansTheEngineCannotRunYetAreRefusedInOneLine)
{
  const GptConfig model = tiny_llama_model();
  ParallelPlan plan;
  EXPECT_NO_THROW(check_engine_supports_plan(model, plan));
  GptConfig odd_width = model;
  odd_width.ffn_hidden = 66;
  for (const auto& [set, flag] : std::vector<std::pair<std::function<void(ParallelPlan&)>, std::string>>{
           {[](ParallelPlan& p) { p.cp = 2; }, "--cp: "},
           {[](ParallelPlan& p) { p.precision = GemmPrecision::Fp8; }, "--fp8: "},
           {[](ParallelPlan& p) { p.tp = 4; }, "--ffn-hidden: "}}) {
    ParallelPlan p;
    set(p);
    try {
      check_engine_supports_plan(flag == "--ffn-hidden: " ? odd_width : model, p);
      ADD_FAILURE() << flag << " accepted";
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(flag, 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

} // namespace
} // namespace gputwin::engine::testing
