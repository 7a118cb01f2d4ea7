// CommExpander (sim/collectives/comm_expansion.hpp) on its own: which physical communicators a folded stage
// program's collective stands for (by the workload's group kind and stage, never by arithmetic on group ids),
// which copies go on the network, and which collectives may be timed alone.
#include "gputwin/sim/comm_expansion.hpp"

#include "dgx_spec.hpp"
#include "gputwin/models/rank_layout.hpp"

#include <gtest/gtest.h>

#include <set>

namespace gputwin::sim {
namespace {

GptConfig model()
{
  return GptConfig{"test", 1024, 16, 8, 512, 1024};
}

// tp 4, pp 2, dp 4 on 4 DGX nodes: a TP group is half a node, a DP group spans nodes.
Workload plan_workload()
{
  ParallelPlan p;
  p.tp = 4;
  p.pp = 2;
  p.dp = 4;
  p.micro_batch = 1;
  p.global_batch = 8;
  validate_plan(model(), p);
  return make_workload(model(), p);
}

traces::Op collective_on(int32_t group, CollectiveOp kind, double bytes)
{
  traces::Op op;
  op.kind = traces::OpKind::Collective;
  op.collective = kind;
  op.group = group;
  op.bytes = bytes;
  return op;
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

} // namespace
} // namespace gputwin::sim
