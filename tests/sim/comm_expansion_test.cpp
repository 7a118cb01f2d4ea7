// CommExpander (sim/collectives/comm_expansion.hpp) on its own: which physical communicators a folded stage
// program's collective stands for (by the workload's group kind and stage, never by arithmetic on group ids),
// which copies go on the network, and which collectives may be timed alone.
#include "gputwin/sim/comm_expansion.hpp"

#include "dgx_spec.hpp"
#include "folded_workload.hpp"
#include "gputwin/models/rank_layout.hpp"

#include <gtest/gtest.h>

#include <set>

namespace gputwin::sim {
namespace {

using testing::collective_on;

Workload plan_workload()
{
  return testing::tp4_pp2_dp4_workload();
}

// The set of GPUs the flows of `work` touch.
std::set<int> gpus_of(const CommWork& work)
{
  std::set<int> gpus;
  for (const Flow& f : work.flows) {
    gpus.insert(f.src_gpu);
    gpus.insert(f.dst_gpu);
  }
  return gpus;
}

TEST(CommExpander, GroupsAreKnownByKindAndStage)
{
  const Workload w = plan_workload();
  ASSERT_EQ(w.groups.size(), w.roles.size());
  ASSERT_EQ(w.groups.size(), 2u * 2 + 1); // tp and dp per stage, then the embedding group
  for (int64_t stage = 0; stage < 2; ++stage) {
    EXPECT_EQ(w.role(w.tp_group(stage)).kind, GroupKind::Tp);
    EXPECT_EQ(w.role(w.tp_group(stage)).stage, stage);
    EXPECT_EQ(w.role(w.dp_group(stage)).kind, GroupKind::Dp);
    EXPECT_EQ(w.role(w.dp_group(stage)).stage, stage);
    EXPECT_EQ(w.groups[static_cast<size_t>(w.tp_group(stage))].kind, "tp");
  }
  EXPECT_EQ(w.role(w.embedding_group()).kind, GroupKind::Embedding);
}

TEST(CommExpander, TpCopiesStayInTheirNodeAndOnlyCopyZeroIsOnTheLinks)
{
  const topo::ClusterSpec cluster = testing::dgx_like_spec(4, false);
  const Workload w = plan_workload();
  CommExpander expander(cluster, w);
  // Stage 1's TP group of the representative rank (tp 0, dp 0): 4 GPUs inside one node, link-disjoint from
  // the other replicas' copies, so only its own flows are on the network.
  const CommWork& tp = expander.collective(collective_on(w.tp_group(1), CollectiveOp::AllReduce, 64e6));
  EXPECT_EQ(tp.copies, 1);
  const std::vector<int32_t> members = tp_group_ranks(w.plan, 1, 0);
  EXPECT_EQ(gpus_of(tp), std::set<int>(members.begin(), members.end()));
  EXPECT_TRUE(expander.may_run_alone(collective_on(w.tp_group(1), CollectiveOp::AllReduce, 64e6)));
}

TEST(CommExpander, DpAndEmbeddingCopiesCrossNodesAndAreAllOnTheLinks)
{
  const topo::ClusterSpec cluster = testing::dgx_like_spec(4, false);
  const Workload w = plan_workload();
  CommExpander expander(cluster, w);
  // A DP group of stage 0 spans the nodes: every tp index's copy shares NICs with the others.
  const CommWork& dp = expander.collective(collective_on(w.dp_group(0), CollectiveOp::AllReduce, 64e6));
  EXPECT_EQ(dp.copies, 4);
  std::set<int> expected;
  for (int64_t t = 0; t < 4; ++t)
    for (const int32_t r : dp_group_ranks(w.plan, 0, t))
      expected.insert(r);
  EXPECT_EQ(gpus_of(dp), expected);
  EXPECT_FALSE(expander.may_run_alone(collective_on(w.dp_group(0), CollectiveOp::AllReduce, 64e6)));
  // The embedding group pairs stage 0 and the last stage, one pair per (replica, tp index).
  const CommWork& emb = expander.collective(collective_on(w.embedding_group(), CollectiveOp::AllReduce, 8e6));
  EXPECT_EQ(emb.copies, 16);
  EXPECT_FALSE(expander.may_run_alone(collective_on(w.embedding_group(), CollectiveOp::AllReduce, 8e6)));
  EXPECT_THROW(expander.collective(collective_on(99, CollectiveOp::AllReduce, 1e6)), std::invalid_argument);
}

TEST(CommExpander, AMessageBetweenStagesHasOneCopyPerFoldedRank)
{
  const topo::ClusterSpec cluster = testing::dgx_like_spec(4, false);
  const Workload w = plan_workload();
  CommExpander expander(cluster, w);
  const CommWork& m = expander.message(int64_t{0}, int64_t{1}, 1e6);
  EXPECT_GE(m.copies, 1);
  EXPECT_LE(m.copies, 16); // at most one per (replica, tp index)
  for (const Flow& f : m.flows) {
    EXPECT_EQ(rank_coord(w.plan, f.src_gpu).stage, 0);
    EXPECT_EQ(rank_coord(w.plan, f.dst_gpu).stage, 1);
  }
}

TEST(CommExpander, CopiesOnANodeWithAFaultedCableAreOnTheLinksToo)
{
  const Workload w = plan_workload();
  topo::ClusterSpec healthy_spec = testing::dgx_like_spec(4, false);
  const topo::ClusterGraph healthy(healthy_spec);
  // The last replica's TP group of stage 1, on another node than replica 0's: one of its NVLink cables degraded.
  const std::vector<int32_t> first = tp_group_ranks(w.plan, 1, 0), last = tp_group_ranks(w.plan, 1, w.plan.dp - 1);
  const int node = healthy.node_of_gpu(last.front()), local = last.front() % healthy_spec.gpus_per_node;
  ASSERT_NE(node, healthy.node_of_gpu(first.front()));
  topo::ClusterSpec faulty_spec = healthy_spec;
  const std::string prefix = "n" + std::to_string(node) + ".";
  faulty_spec.faults.degraded_links = {{prefix + "gpu" + std::to_string(local) + "->" + prefix + "nvswitch", 0.01}};
  const topo::ClusterGraph faulty(std::move(faulty_spec));
  EXPECT_TRUE(faulty.node_faulted(node));
  EXPECT_FALSE(faulty.node_faulted(healthy.node_of_gpu(first.front())));

  const traces::Op tp = collective_on(w.tp_group(1), CollectiveOp::AllReduce, 64e6);
  CommExpander healthy_expander(healthy, w), faulty_expander(faulty, w);
  EXPECT_EQ(healthy_expander.collective(tp).copies, 1);
  // Copy 0 stands for the healthy replicas; the faulted node's copy runs on its own links.
  const CommWork& work = faulty_expander.collective(tp);
  std::set<int> expected(first.begin(), first.end());
  for (const int32_t r : tp_group_ranks(w.plan, 1, w.plan.dp - 2))
    if (healthy.node_of_gpu(r) == node)
      expected.insert(r); // a replica sharing the faulted node
  expected.insert(last.begin(), last.end());
  EXPECT_EQ(gpus_of(work), expected);
  EXPECT_EQ(work.copies, static_cast<int>(expected.size() / first.size()));
}

TEST(CommExpander, MessagesInsideANodeWithAFaultedCableAreAllOnTheLinks)
{
  // tp 1, pp 4, dp 4 on 2 DGX nodes: stages 0 and 1 on node 0, stages 2 and 3 on node 1, 4 replicas each.
  ParallelPlan p;
  p.pp = 4;
  p.dp = 4;
  p.global_batch = 8;
  validate_plan(testing::small_test_model(), p);
  const Workload w = make_workload(testing::small_test_model(), p);
  topo::ClusterSpec spec = testing::dgx_like_spec(2, false);
  spec.faults.degraded_links = {{"n1.gpu5->n1.nvswitch", 0.01}}; // stage 3 of replica 1
  const topo::ClusterGraph faulty(std::move(spec));
  CommExpander expander(faulty, w);
  EXPECT_EQ(expander.message(int64_t{0}, int64_t{1}, 1e6).copies, 1); // node 0: copy 0 stands for all
  const CommWork& on_faulted_node = expander.message(int64_t{2}, int64_t{3}, 1e6);
  EXPECT_EQ(on_faulted_node.copies, 4);
  EXPECT_EQ(gpus_of(on_faulted_node), (std::set<int>{8, 9, 10, 11, 12, 13, 14, 15}));
}

} // namespace
} // namespace gputwin::sim
