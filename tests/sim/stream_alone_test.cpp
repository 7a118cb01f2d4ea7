// One stream of collectives timed without a platform (sim/executor/stream_alone.hpp) against the same stream on
// SimGrid with every flow through its max-min (FlowRunner's shortcut off): every plan's start and end to 1e-9 of
// the run, over algorithms whose flows join at different latencies (all-to-all across nodes), rings and trees
// back to back, zero-byte flows, and several flow sets at once (TP rings of disjoint nodes). The link and route
// counts are the platform's. One SimGrid platform per process (ctest runs each test in its own).
#include "dgx_spec.hpp"

#include "gputwin/sim/collective_executor.hpp"
#include "gputwin/sim/stream_alone.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace gputwin::sim {
namespace {

using testing::first_gpus;

void expect_alone_equals_simgrid(const topo::ClusterGraph& graph, const std::vector<const CollectivePlan*>& stream)
{
  const SimgridPlatform platform(graph, flow_pairs(stream));
  const std::vector<PlanTiming> reference = run_collective_streams(platform, graph, {stream}, false).at(0);
  StreamAloneStats stats;
  const std::vector<PlanTiming> alone = time_stream_alone(graph, stream, &stats);
  ASSERT_EQ(alone.size(), reference.size());
  const double end_s = reference.back().end_s;
  ASSERT_GT(end_s, 0);
  for (size_t p = 0; p < alone.size(); ++p) {
    EXPECT_NEAR(alone[p].start_s, reference[p].start_s, 1e-9 * end_s) << p;
    EXPECT_NEAR(alone[p].end_s, reference[p].end_s, 1e-9 * end_s) << p;
  }
  EXPECT_EQ(stats.links, platform.link_count());
  EXPECT_EQ(stats.routes, platform.route_count());
}

TEST(StreamAlone, AllToAllAcrossNodesThenRingAndTreeEqualSimgrid)
{
  const topo::ClusterGraph graph(testing::dgx_like_spec(3, false));
  const CollectivePlan a = plan_collective(graph.spec(), CollectiveOp::AllToAll, first_gpus(24), 5e8);
  const CollectivePlan r = plan_collective(graph.spec(), CollectiveOp::AllReduce, first_gpus(24), 1e9,
                                           {NcclAlgorithm::Ring, NcclProtocol::Simple});
  const CollectivePlan t = plan_collective(graph.spec(), CollectiveOp::AllReduce, first_gpus(24), 3e8,
                                           {NcclAlgorithm::Tree, NcclProtocol::Simple});
  const CollectivePlan empty = plan_collective(graph.spec(), CollectiveOp::AllGather, first_gpus(24), 0);
  expect_alone_equals_simgrid(graph, {&a, &r, &empty, &t, &a});
}

TEST(StreamAlone, RingsOfDisjointNodesAreFlowSetsOfTheirOwn)
{
  // Two TP-like groups on different nodes in one plan: two components, each solved alone.
  const topo::ClusterGraph graph(testing::dgx_like_spec(2, false));
  CollectivePlan two = plan_collective(graph.spec(), CollectiveOp::AllReduce, first_gpus(8), 2e8,
                                       {NcclAlgorithm::Ring, NcclProtocol::Simple});
  const CollectivePlan other = plan_collective(graph.spec(), CollectiveOp::AllReduce, {8, 9, 10, 11}, 6e8,
                                               {NcclAlgorithm::Ring, NcclProtocol::Simple});
  two.flows.insert(two.flows.end(), other.flows.begin(), other.flows.end());
  const CollectivePlan send = plan_collective(graph.spec(), CollectiveOp::SendRecv, {0, 8}, 1e8);
  expect_alone_equals_simgrid(graph, {&two, &send, &two});
}

TEST(StreamAlone, AFlowFromAGpuToItselfIsRefused)
{
  const topo::ClusterGraph graph(testing::dgx_like_spec(1, false));
  CollectivePlan self;
  self.flows.push_back(Flow{2, 2, 1e6, 1});
  EXPECT_THROW(time_stream_alone(graph, {&self}), std::invalid_argument);
}

} // namespace
} // namespace gputwin::sim
