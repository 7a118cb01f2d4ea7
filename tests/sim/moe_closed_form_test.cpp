// A one-layer mixture-of-experts model on an ideal cluster (a plain roofline: every kernel's time is its FLOPs at
// the peak or its bytes at the HBM bandwidth, whichever is longer), with every token routed to one expert against
// perfect balance: the busiest EP rank's grouped GEMMs and the all-to-all's per-pair bytes, derived by hand.
// sim/README.md "Mixture of experts".
#include "gputwin/models/expert_load.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/models/op_vocabulary.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/comm_expansion.hpp"
#include "gputwin/sim/iteration_estimate.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace gputwin::sim {
namespace {

constexpr double peak_flops = 312e12, hbm_bytes_per_s = 2039e9;
constexpr int64_t h = 1024, F = 4096, s = 1024;

GpuComputeModel ideal_gpu()
{
  return nominal_roofline_model("ideal", peak_flops, hbm_bytes_per_s, "moe closed-form test: ideal roofline");
}

// One MoE layer of 2 experts (top-1, GeLU experts of width F) on tp 1, dp 2, ep 2: one expert per EP rank.
GptConfig one_layer_moe()
{
  GptConfig m{"moe-closed-form", h, 8, 1, s, 128};
  m.moe.experts = 2;
  m.moe.topk = 1;
  m.moe.expert_ffn_hidden = F;
  return m;
}

ParallelPlan ep2_plan()
{
  ParallelPlan p;
  p.dp = 2;
  p.ep = 2;
  p.global_batch = 2; // one micro-batch per replica
  validate_plan(one_layer_moe(), p);
  return p;
}

// Every token to expert 0: rank 0 (which holds it) computes twice the balanced rows, rank 1 none.
std::shared_ptr<const ExpertLoads> all_on_expert_zero()
{
  auto loads = std::make_shared<ExpertLoads>();
  LayerExpertLoad layer;
  layer.layer = 0;
  layer.expert = {2.0, 0.0};
  layer.rank = {2.0, 0.0};
  layer.busiest_rank = 0;
  loads->layers.push_back(layer);
  return loads;
}

// Roofline time of an op of `flops` and `bytes`.
double roofline_s(double flops, double bytes)
{
  return std::max(flops / peak_flops, bytes / hbm_bytes_per_s);
}

// Seconds of one micro-batch's expert kernels (forward and backward) on a rank computing `rows` token copies, by
// hand: the six GEMMs (fc1, fc2 forward; each one's input and weight gradient) of 2 rows F h FLOPs, reading and
// writing bf16 operands; GeLU forward (read and write rows x F in bf16, 8 FLOPs per element) and backward (read
// two, write one, 10 FLOPs per element).
double expert_kernels_s(double rows)
{
  const double gemm_flops = 2.0 * rows * F * h;
  const double fc_fwd_bytes = 2.0 * (rows * h + h * F + rows * F);
  double t = 0;
  for (int i = 0; i < 6; ++i)
    t += roofline_s(gemm_flops, fc_fwd_bytes); // every GEMM of the six moves the same three operand sizes
  t += roofline_s(8.0 * rows * F, 4.0 * rows * F);
  t += roofline_s(10.0 * rows * F, 6.0 * rows * F);
  return t;
}

double estimate_s(const Workload& w)
{
  const topo::ClusterGraph graph(topo::load_cluster("dgx-a100", 1, {}));
  IterationOptions options;
  options.zero_communication = true;
  return estimate_iteration(graph, w, ideal_gpu(), builtin_framework_profile("none"), options, {}).iteration_time_s;
}

TEST(MoeClosedForm, AllTokensOnOneExpertAddTheBusiestRanksExtraGroupedGemmsByHand)
{
  const GptConfig model = one_layer_moe();
  const ParallelPlan plan = ep2_plan();
  const Workload balanced = make_workload(model, plan);
  const Workload hot = make_workload(model, plan, {}, nullptr, all_on_expert_zero());
  const double balanced_rows = static_cast<double>(s); // T k etp = s x 1 x 1 token copies per rank
  const double by_hand = expert_kernels_s(2 * balanced_rows) - expert_kernels_s(balanced_rows);
  EXPECT_GT(by_hand, 0);
  EXPECT_NEAR(estimate_s(hot) - estimate_s(balanced), by_hand, 1e-9 * by_hand + 1e-12);
}

TEST(MoeClosedForm, ExpertGemmsAreGroupedOverTheLocalExpertsAtTheirTokenShare)
{
  GptConfig model = one_layer_moe();
  model.moe.experts = 8; // 4 local experts on each of the 2 EP ranks, top-2
  model.moe.topk = 2;
  ParallelPlan plan = ep2_plan();
  const LayerShape shape = [&] {
    LayerShape x = layer_shape(model, plan);
    x.moe_layer = true;
    return x;
  }();
  const OpCost fc1 = op_cost(OpName::ExpertFc1Fwd, shape);
  // s tokens x top-2 = 2048 copies per rank over its 4 experts: 512 rows each, one call of 4 GEMMs.
  EXPECT_EQ(fc1.gemm.batch, 4);
  EXPECT_EQ(fc1.gemm.m, 512);
  EXPECT_EQ(fc1.gemm.n, F);
  EXPECT_EQ(fc1.gemm.k, h);
  EXPECT_DOUBLE_EQ(fc1.flops, 2.0 * 2048 * F * h);
}

// The flows of a layer's all-to-all on the EP group, by (source GPU, destination GPU), protocol factor removed.
std::map<std::pair<int, int>, double> a2a_flows(const Workload& w, OpName name)
{
  const topo::ClusterSpec cluster = topo::load_cluster("dgx-a100", 1, {});
  CommExpander expander(cluster, w);
  const traces::RankProgram program = stage_program(w, 0);
  const auto op = std::find_if(program.ops.begin(), program.ops.end(),
                               [&](const traces::Op& o) { return o.name == op_name(name); });
  EXPECT_NE(op, program.ops.end());
  std::map<std::pair<int, int>, double> flows;
  const CommWork& work = expander.collective(*op);
  double total = 0;
  for (const Flow& f : work.flows)
    total += f.bytes;
  for (const Flow& f : work.flows)
    flows[{f.src_gpu, f.dst_gpu}] += f.bytes / total; // shares of the op's bytes on the wire
  return flows;
}

TEST(MoeClosedForm, AllToAllPairBytesFollowTheReceiversLoadForDispatchAndTheSendersForCombine)
{
  const GptConfig model = one_layer_moe();
  const ParallelPlan plan = ep2_plan();
  const Workload balanced = make_workload(model, plan);
  const Workload hot = make_workload(model, plan, {}, nullptr, all_on_expert_zero());
  // Balanced: each rank keeps half its s h bf16 token copies and sends the other half: 0 -> 1 and 1 -> 0 alike.
  using Pairs = std::map<std::pair<int, int>, double>;
  EXPECT_EQ(a2a_flows(balanced, OpName::MoeDispatch), (Pairs{{{0, 1}, 0.5}, {{1, 0}, 0.5}}));
  // All on expert 0: dispatch sends everything to rank 0 (rank 1's whole buffer crosses, rank 0's stays);
  // combine returns rank 1's tokens from rank 0.
  EXPECT_EQ(a2a_flows(hot, OpName::MoeDispatch), (Pairs{{{1, 0}, 1.0}}));
  EXPECT_EQ(a2a_flows(hot, OpName::MoeCombine), (Pairs{{{0, 1}, 1.0}}));
  EXPECT_EQ(a2a_flows(hot, OpName::MoeCombineBwd), (Pairs{{{1, 0}, 1.0}}));
  EXPECT_EQ(a2a_flows(hot, OpName::MoeDispatchBwd), (Pairs{{{0, 1}, 1.0}}));
  // And the op's size is the rank's routed copies in bf16: s x top-1 x h x 2 bytes.
  const traces::RankProgram program = stage_program(balanced, 0);
  const auto dispatch = std::find_if(program.ops.begin(), program.ops.end(),
                                     [](const traces::Op& o) { return o.name == "moe.dispatch"; });
  ASSERT_NE(dispatch, program.ops.end());
  EXPECT_DOUBLE_EQ(dispatch->bytes, 2.0 * s * h);
}

TEST(MoeClosedForm, ImbalanceIsSeededDeterministicAndSlowsTheIteration)
{
  const GptConfig model = one_layer_moe();
  ParallelPlan plan = ep2_plan();
  plan.moe_imbalance_cv = 0.5;
  const ExpertLoads a = expert_loads(model, plan), b = expert_loads(model, plan);
  ASSERT_EQ(a.layers.size(), 1u);
  EXPECT_EQ(a.layers[0].expert, b.layers[0].expert);
  EXPECT_NEAR(a.layers[0].expert[0] + a.layers[0].expert[1], 2.0, 1e-12); // mean exactly 1
  EXPECT_GT(a.max_rank_load(), 1.0);
  plan.moe_seed = 2;
  EXPECT_NE(expert_loads(model, plan).layers[0].expert, a.layers[0].expert);
  plan.moe_seed = 1;
  EXPECT_GT(estimate_s(make_workload(model, plan)), estimate_s(make_workload(model, ep2_plan())));
  // A capacity factor of 1 caps every expert at its balanced share: nothing slower than balance, tokens dropped.
  plan.capacity_factor = 1.0;
  const ExpertLoads capped = expert_loads(model, plan);
  EXPECT_DOUBLE_EQ(capped.max_rank_load(), 1.0);
  EXPECT_GT(capped.dropped_fraction, 0.0);
}

} // namespace
} // namespace gputwin::sim
