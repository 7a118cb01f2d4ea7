// Latency-bound collectives (sim/collectives/comm_source.hpp, kLatencyBoundShare): CommExpander gives a NCCL
// collective whose transfer alone is at most 1/1000 of NCCL's latency no flows, only its closed form, and that
// closed form is what its flows take alone (the flow runner's timing without a platform, stream_alone.hpp).
// Collectives with a real transfer, and all-to-alls and sends (no closed form), keep their flows.
#include "dgx_spec.hpp"
#include "folded_workload.hpp"

#include "gputwin/models/rank_layout.hpp"
#include "gputwin/sim/comm_expansion.hpp"
#include "gputwin/sim/stream_alone.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace gputwin::sim {
namespace {

using testing::collective_on;

Workload dp_across_nodes()
{
  return testing::tp4_pp2_dp4_workload();
}

TEST(LatencyBound, AnAmaxSizedAllReduceIsItsFlowsTimeAloneWithoutFlows)
{
  const topo::ClusterGraph graph(testing::dgx_like_spec(4, false));
  const Workload w = dp_across_nodes();
  CommExpander expander(graph, w);
  const double bytes = 48; // an FP8 layer's 12 amaxes, 4 bytes each
  const CommWork& work = expander.collective(collective_on(w.dp_group(0), CollectiveOp::AllReduce, bytes));
  EXPECT_TRUE(work.flows.empty());
  EXPECT_EQ(work.copies, 4);

  // Copy 0's plan with its flows, timed alone as the flow runner would.
  const std::vector<int32_t> ranks = dp_group_ranks(w.plan, 0, 0);
  const CollectivePlan plan =
      plan_collective(graph.spec(), CollectiveOp::AllReduce, std::vector<int>(ranks.begin(), ranks.end()), bytes);
  ASSERT_TRUE(latency_bound(plan));
  ASSERT_FALSE(plan.flows.empty());
  const double with_flows_s = time_stream_alone(graph, {&plan}).at(0).end_s;
  EXPECT_GT(work.latency_s, plan.choice.latency_s); // the routes' latency is paid too
  EXPECT_NEAR(work.latency_s, with_flows_s, kLatencyBoundShare * plan.choice.latency_s);
}

TEST(LatencyBound, CollectivesThatMoveDataKeepTheirFlows)
{
  const topo::ClusterGraph graph(testing::dgx_like_spec(4, false));
  const Workload w = dp_across_nodes();
  CommExpander expander(graph, w);
  const CommWork& gradients = expander.collective(collective_on(w.dp_group(0), CollectiveOp::AllReduce, 64e6));
  EXPECT_FALSE(gradients.flows.empty());
  // No closed form for all-to-all and send/receive: their flows are the model, whatever their size.
  const CommWork& exchange = expander.collective(collective_on(w.dp_group(0), CollectiveOp::AllToAll, 64));
  EXPECT_FALSE(exchange.flows.empty());
  const CollectivePlan send = plan_collective(graph.spec(), CollectiveOp::SendRecv, {0, 8}, 16);
  EXPECT_FALSE(latency_bound(send));
}

} // namespace
} // namespace gputwin::sim
