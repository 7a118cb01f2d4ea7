// Mixture-of-experts layers in the engine (CPU backend): the router's top-k, permutation and unpermutation
// kernels against finite differences; whole-step numerics of a MoE model under expert parallelism (EP 2 over
// the data-parallel ranks, EP 2 x TP 2 with SP, EP 2 with an expert data-parallel group of 2, EP with pipeline
// stages) against the single-rank run, with the tolerances of numerics_test.cpp; the traced ops of a MoE layer
// in the workload generator's order; the plans the engine refuses; and a training run whose loss halves.
#include "engine_test_support.hpp"
#include "kernel_test_support.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/engine/train/trainer.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

namespace gputwin::engine::testing {
namespace {

constexpr double loss_relative_tolerance = 1e-5;
constexpr double gradient_relative_l2_tolerance = 1e-2;

// The tiny GPT (h 64, a 4, L 4, s 16, v 128) with 4 experts of width 64, top-2, the first layer dense.
GptConfig tiny_moe_model()
{
  GptConfig m = tiny_model();
  m.name = "tiny-moe";
  m.moe.experts = 4;
  m.moe.topk = 2;
  m.moe.expert_ffn_hidden = 64;
  m.moe.dense_first_layers = 1;
  return m;
}

struct MoePlan {
  PlanSpec spec;
  int64_t ep = 1;
};

TrainResult run_moe(const GptConfig& model, const MoePlan& p, int64_t steps, bool gradients, bool trace = false)
{
  TrainConfig config;
  config.model = model;
  config.plan = make_plan(p.spec);
  config.plan.ep = p.ep;
  config.plan.etp = 1;
  validate_plan(config.model, config.plan);
  config.options.dropout = 0.1f;
  config.steps = steps;
  config.capture_gradients = gradients;
  config.record_trace = trace;
  return train(config);
}

std::string describe(const MoePlan& p)
{
  return testing::describe(p.spec) + " ep" + std::to_string(p.ep);
}

// ---------------------------------------------------------------------------------------------------------------
// Kernels: f(logits, expert_out) = sum_t c_t . unpermute(expert_out, top-k weights(softmax(logits))); its
// gradient through moe_unpermute_backward and router_topk_backward against central differences. The top-k choice
// is piecewise constant, so the logits are kept apart (no tie within a step).

class MoeKernels : public KernelTest {};

TEST_F(MoeKernels, RouterTopkAndUnpermuteMatchFiniteDifferences)
{
  const int64_t tokens = 5, experts = 6, k = 3, h = 4;
  Tensor logits = random(DType::F32, {tokens, experts}, 2.0f);
  Tensor expert_out = random(DType::F32, {tokens * k, h});
  Tensor c = random(DType::F32, {tokens, h});
  Tensor probs = zeros(DType::F32, {tokens, experts}), indices = zeros(DType::I32, {tokens, k});
  Tensor weights = zeros(DType::F32, {tokens, k}), positions = zeros(DType::I32, {tokens * k});
  Tensor out = zeros(DType::F32, {tokens, h});
  for (int64_t i = 0; i < tokens * k; ++i) // any permutation of the copies: reversed
    positions.i32()[i] = static_cast<int32_t>(tokens * k - 1 - i);
  const auto f = [&] {
    cpu.router_topk_forward(probs, indices, weights, logits, tokens, experts, k);
    cpu.moe_unpermute_forward(out, expert_out, weights, positions, tokens, k, h);
    double sum = 0;
    for (int64_t i = 0; i < tokens * h; ++i)
      sum += static_cast<double>(out.f32()[i]) * c.f32()[i];
    return sum;
  };
  f();
  // The chosen experts are the k largest, in descending order, and their weights sum to 1.
  for (int64_t t = 0; t < tokens; ++t) {
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) {
      sum += weights.f32()[t * k + j];
      if (j > 0) {
        EXPECT_GE(probs.f32()[t * experts + indices.i32()[t * k + j - 1]],
                  probs.f32()[t * experts + indices.i32()[t * k + j]]);
      }
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
  Tensor d_expert_out = zeros(DType::F32, {tokens * k, h}), d_weights = zeros(DType::F32, {tokens, k});
  Tensor d_logits = zeros(DType::F32, {tokens, experts});
  cpu.moe_unpermute_backward(d_expert_out, d_weights, c, expert_out, weights, positions, tokens, k, h);
  cpu.router_topk_backward(d_logits, d_weights, probs, indices, weights, tokens, experts, k);
  const auto check = [&](Tensor& x, const Tensor& grad, const char* what) {
    const float step = 1e-3f;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const float saved = x.f32()[i];
      x.f32()[i] = saved + step;
      const double up = f();
      x.f32()[i] = saved - step;
      const double down = f();
      x.f32()[i] = saved;
      EXPECT_NEAR(grad.f32()[i], (up - down) / (2.0 * step), 2e-3) << what << " element " << i;
    }
  };
  check(logits, d_logits, "d_logits");
  check(expert_out, d_expert_out, "d_expert_out");
}

TEST_F(MoeKernels, PermuteAndItsBackwardAreTransposes)
{
  const int64_t tokens = 3, k = 2, h = 5;
  Tensor in = random(DType::F32, {tokens, h});
  Tensor positions = zeros(DType::I32, {tokens * k});
  const std::vector<int32_t> order{4, 0, 2, 5, 1, 3};
  for (size_t i = 0; i < order.size(); ++i)
    positions.i32()[i] = order[i];
  Tensor permuted = zeros(DType::F32, {tokens * k, h});
  cpu.moe_permute_forward(permuted, in, positions, tokens, k, h);
  for (int64_t t = 0; t < tokens; ++t)
    for (int64_t j = 0; j < k; ++j)
      for (int64_t c = 0; c < h; ++c)
        EXPECT_EQ(permuted.f32()[order[static_cast<size_t>(t * k + j)] * h + c], in.f32()[t * h + c]);
  // <permute(x), g> = <x, permute_backward(g)>
  Tensor g = random(DType::F32, {tokens * k, h});
  Tensor d_in = zeros(DType::F32, {tokens, h});
  cpu.moe_permute_backward(d_in, g, positions, tokens, k, h);
  double left = 0, right = 0;
  for (int64_t i = 0; i < tokens * k * h; ++i)
    left += static_cast<double>(permuted.f32()[i]) * g.f32()[i];
  for (int64_t i = 0; i < tokens * h; ++i)
    right += static_cast<double>(in.f32()[i]) * d_in.f32()[i];
  EXPECT_NEAR(left, right, 1e-5);
}

// ---------------------------------------------------------------------------------------------------------------
// Whole steps against one rank.

const TrainResult& moe_reference()
{
  static const TrainResult result = run_moe(tiny_moe_model(), MoePlan{PlanSpec{.global_batch = 4}, 1}, 1, true);
  return result;
}

void expect_matches_one_rank(const MoePlan& plan)
{
  expect_same_training(run_moe(tiny_moe_model(), plan, 1, true), moe_reference(), describe(plan),
                       loss_relative_tolerance, gradient_relative_l2_tolerance);
}

TEST(MoeNumerics, TheReferenceHasRouterAndExpertGradients)
{
  const TrainResult& ref = moe_reference();
  std::map<std::string, double> norms;
  for (const LogicalTensor& g : ref.gradients) {
    double n = 0;
    for (const float v : g.values)
      n += static_cast<double>(v) * v;
    norms[g.name] = n;
  }
  EXPECT_EQ(norms.count("layers.0.fc1.weight"), 1u); // the dense first layer
  EXPECT_EQ(norms.count("layers.1.fc1.weight"), 0u);
  for (const char* name : {"layers.1.router.weight", "layers.3.router.weight", "layers.1.experts.0.fc1.weight",
                           "layers.2.experts.3.fc2.weight"}) {
    ASSERT_EQ(norms.count(name), 1u) << name;
    EXPECT_GT(norms[name], 0.0) << name;
  }
}

TEST(MoeNumerics, ExpertParallelOverDataParallelRanksMatchesOneRank)
{
  expect_matches_one_rank(MoePlan{PlanSpec{.dp = 2, .global_batch = 4}, 2});
}

TEST(MoeNumerics, ExpertParallelTimesTensorParallelMatchesOneRank)
{
  expect_matches_one_rank(MoePlan{PlanSpec{.tp = 2, .sp = true, .global_batch = 4}, 2});
}

TEST(MoeNumerics, ExpertDataParallelGroupMatchesOneRank)
{
  // tp 2 x dp 2 with ep 2: each expert on two ranks, its gradient all-reduced over the edp group.
  expect_matches_one_rank(MoePlan{PlanSpec{.tp = 2, .dp = 2, .sp = true, .global_batch = 4}, 2});
}

TEST(MoeNumerics, ExpertParallelWithPipelineStagesAndRecomputeMatchesOneRank)
{
  expect_matches_one_rank(
      MoePlan{PlanSpec{.pp = 2, .dp = 2, .recompute = Recompute::Full, .global_batch = 4}, 2});
  expect_matches_one_rank(MoePlan{PlanSpec{.tp = 2, .sp = true, .recompute = Recompute::Selective,
                                           .micro_batch = 2, .global_batch = 4},
                                  2});
}

TEST(MoeNumerics, SwigluExpertsUnderExpertParallelismMatchOneRank)
{
  GptConfig model = tiny_moe_model();
  model.activation = Activation::SwiGlu;
  model.bias = false;
  model.dropout = false;
  const TrainResult ref = run_moe(model, MoePlan{PlanSpec{.global_batch = 4}, 1}, 1, true);
  const TrainResult run = run_moe(model, MoePlan{PlanSpec{.tp = 2, .sp = true, .global_batch = 4}, 2}, 1, true);
  ASSERT_EQ(run.gradients.size(), ref.gradients.size());
  EXPECT_NEAR(run.loss_per_step[0], ref.loss_per_step[0], loss_relative_tolerance * ref.loss_per_step[0]);
  for (size_t i = 0; i < ref.gradients.size(); ++i)
    EXPECT_LE(relative_l2_error(run.gradients[i].values, ref.gradients[i].values), gradient_relative_l2_tolerance)
        << ref.gradients[i].name;
}

// ---------------------------------------------------------------------------------------------------------------
// The traced ops of a MoE layer: the vocabulary's names in the workload generator's order.

std::vector<std::string> layer_ops(const traces::RankProgram& program, int32_t layer, traces::Phase phase)
{
  std::vector<std::string> names;
  for (const traces::Op& op : program.ops)
    if (op.layer == layer && op.phase == phase && op.micro_batch == 0)
      names.push_back(op.name);
  return names;
}

TEST(MoeTrace, AMoeLayerTracesTheGeneratorsOpsInItsOrder)
{
  const TrainResult run = run_moe(tiny_moe_model(), MoePlan{PlanSpec{.tp = 2, .sp = true, .global_batch = 4}, 2}, 1,
                                  false, true);
  ASSERT_EQ(run.trace.ranks.size(), 2u);
  const std::vector<std::string> forward = layer_ops(run.trace.ranks[0], 1, traces::Phase::Forward);
  const std::vector<std::string> expected_forward{"ln2.fwd",        "moe.router.fwd", "moe.router_topk.fwd",
                                                  "moe.permute.fwd", "moe.dispatch",  "expert.fc1.fwd",
                                                  "expert.act.fwd",  "expert.fc2.fwd", "moe.combine",
                                                  "moe.unpermute.fwd", "dropout_add.fwd"};
  ASSERT_GE(forward.size(), expected_forward.size());
  EXPECT_EQ(std::vector<std::string>(forward.end() - static_cast<std::ptrdiff_t>(expected_forward.size()),
                                     forward.end()),
            expected_forward);
  const std::vector<std::string> backward = layer_ops(run.trace.ranks[0], 1, traces::Phase::Backward);
  const std::vector<std::string> expected_backward{
      "dropout_add.bwd",  "moe.unpermute.bwd", "moe.combine.bwd",  "expert.fc2.dgrad",    "expert.fc2.wgrad",
      "expert.act.bwd",   "expert.fc1.dgrad",  "expert.fc1.wgrad", "moe.dispatch.bwd",    "moe.permute.bwd",
      "moe.router_topk.bwd", "moe.router.dgrad", "moe.router.wgrad", "ln2.bwd",           "residual.bwd"};
  ASSERT_GE(backward.size(), expected_backward.size());
  EXPECT_EQ(std::vector<std::string>(backward.begin(),
                                     backward.begin() + static_cast<std::ptrdiff_t>(expected_backward.size())),
            expected_backward);
  // The all-to-alls are on the EP group, the expert gradients reduced over the expert data-parallel group.
  int all_to_alls = 0, edp = 0;
  for (const traces::Op& op : run.trace.ranks[0].ops) {
    if (op.kind == traces::OpKind::Collective && op.collective == CollectiveOp::AllToAll) {
      ++all_to_alls;
      EXPECT_EQ(run.trace.groups.at(static_cast<size_t>(op.group)).kind, "ep");
    }
    if (op.name == "edp.all_reduce")
      ++edp;
  }
  EXPECT_EQ(all_to_alls, 3 * 4 * 4); // 3 MoE layers x 4 micro-batches x (dispatch, combine, and their backward)
  EXPECT_EQ(edp, 0); // edp = tp dp / ep = 1: a group of one reduces nothing
}

// ---------------------------------------------------------------------------------------------------------------
// What the engine refuses, in one line.

void expect_refused(const GptConfig& model, const ParallelPlan& plan, const std::string& flag,
                    BackendKind backend = BackendKind::Cpu)
{
  TrainConfig config;
  config.model = model;
  config.plan = plan;
  config.backend = backend;
  try {
    train(config);
    ADD_FAILURE() << "expected an InputError naming " << flag;
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(flag, 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(MoeRefusals, UnsupportedMoePlansAreOneLineInputErrors)
{
  const GptConfig model = tiny_moe_model();
  ParallelPlan plan = make_plan(PlanSpec{.tp = 2, .dp = 2, .sp = true, .global_batch = 4});
  plan.ep = 2; // etp defaults to tp = 2
  expect_refused(model, plan, "--etp");
  plan.etp = 1;
  plan.capacity_factor = 1.25;
  expect_refused(model, plan, "--moe-capacity-factor");
  plan.capacity_factor = 0;
  plan.dispatcher = MoeDispatcher::AllGather;
  expect_refused(model, plan, "--moe-dispatcher");
  plan.dispatcher = MoeDispatcher::AllToAll;
  plan.zero_stage = 1;
  expect_refused(model, plan, "--zero");
  plan.zero_stage = 0;
  GptConfig shared = model;
  shared.moe.shared_experts = 1;
  expect_refused(shared, plan, "--moe-shared-experts");
  expect_refused(model, plan, "--num-experts", BackendKind::Cuda);
}

// ---------------------------------------------------------------------------------------------------------------
// Training: gputwin-engine train --hidden 128 --heads 4 --layers 4 --seq-len 64 --vocab 128 --num-experts 4
// --moe-topk 2 --moe-ffn-hidden 256 --ep 2 --tp 2 --etp 1 --sp --micro-batch 2 --global-batch 8 --steps 50.

TEST(MoeTraining, FiftyStepsWithEp2Tp2HalveTheLoss)
{
  TrainConfig config;
  config.model.name = "small-moe";
  config.model.hidden = 128;
  config.model.heads = 4;
  config.model.layers = 4;
  config.model.seq_len = 64;
  config.model.vocab = 128;
  config.model.moe.experts = 4;
  config.model.moe.topk = 2;
  config.model.moe.expert_ffn_hidden = 256;
  config.plan.tp = 2;
  config.plan.tp_comm = TpComm::SequenceParallel;
  config.plan.ep = 2;
  config.plan.etp = 1;
  config.plan.micro_batch = 2;
  config.plan.global_batch = 8;
  validate_plan(config.model, config.plan);
  config.options.adam.learning_rate = 3e-3f;
  config.steps = 50;
  const TrainResult result = train(config);
  ASSERT_EQ(result.loss_per_step.size(), 50u);
  std::printf("  loss %.4f -> %.4f\n", result.loss_per_step.front(), result.loss_per_step.back());
  EXPECT_NEAR(result.loss_per_step.front(), std::log(128.0), 0.3);
  EXPECT_LE(result.loss_per_step.back(), 0.5 * result.loss_per_step.front());
}

} // namespace
} // namespace gputwin::engine::testing
