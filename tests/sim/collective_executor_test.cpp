// Collectives executed as flows on SimGrid. SimGrid allows one platform per process, so each test builds one
// platform (ctest runs every test in its own process).
#include "dgx_spec.hpp"

#include "gputwin/sim/collective_executor.hpp"

#include <gtest/gtest.h>

#include <numeric>

namespace gputwin::sim {
namespace {

using testing::first_gpus;

TEST(CollectiveExecutor, RingAllReduceReproducesTheClosedFormWithIdealLinks)
{
  // Ideal links (NCCL efficiency 1, CM02 without cross-traffic or TCP window): the simulated time must be
  // exactly 2(n-1)/n S/B + steps alpha, with alpha = NCCL's per-step latency on NVLink (Ring/Simple), plus
  // NCCL's kernel and base latency, each channel's fixed cost, and the route's wire latency once.
  const topo::ClusterGraph graph(testing::dgx_like_spec(1, true));
  const double bytes = 1e9;
  std::vector<CollectivePlan> plans;
  for (const int n : {2, 4, 8})
    plans.push_back(plan_collective(graph.spec(), CollectiveOp::AllReduce, first_gpus(n), bytes,
                                    {NcclAlgorithm::Ring, NcclProtocol::Simple}));
  std::vector<const CollectivePlan*> stream;
  for (const auto& p : plans)
    stream.push_back(&p);
  const SimgridPlatform platform(graph, flow_pairs(stream));
  const auto timings = run_collective_streams(platform, graph, {stream});

  const double B = 300e9;            // NVLink per GPU per direction
  const double wire_s = 2 * 0.35e-6; // GPU -> NVSwitch -> GPU
  for (size_t i = 0; i < plans.size(); ++i) {
    const double n = plans[i].ranks;
    const int steps = 2 * (plans[i].ranks - 1);
    const topo::NcclSpec& nccl = graph.spec().nccl; // kernel + Ring/Simple base + steps + channels
    const double nccl_s = nccl.kernel_s + nccl.simple.base_latency_s + steps * nccl.simple.nvlink_step_s +
                          plans[i].nccl_channels * nccl.channel_s;
    const double closed_form = 2 * (n - 1) / n * bytes / B + nccl_s + wire_s;
    EXPECT_NEAR(timings[0][i].duration_s(), closed_form, 1e-9 * closed_form) << "n=" << n;
  }
}

TEST(CollectiveExecutor, TwoAllReducesSharingTheNicsEachTakeTwiceAsLong)
{
  const topo::ClusterGraph graph(testing::dgx_like_spec(2, false));
  const CollectivePlan a = plan_collective(graph.spec(), CollectiveOp::AllReduce, first_gpus(16), 4e9,
                                           {NcclAlgorithm::Ring, NcclProtocol::Simple});
  const CollectivePlan b = a;
  const SimgridPlatform platform(graph, flow_pairs({&a}));
  const double alone_s = run_collective_streams(platform, graph, {{&a}})[0][0].duration_s();
  const auto together = run_collective_streams(platform, graph, {{&a}, {&b}});
  for (const auto& stream : together)
    EXPECT_NEAR(stream[0].duration_s() / alone_s, 2.0, 0.1);
}

TEST(CollectiveExecutor, DisjointRailsDoNotSlowEachOtherDown)
{
  // GPU 0 <-> 8 uses rail 0, GPU 1 <-> 9 rail 1: no shared link, no slowdown.
  const topo::ClusterGraph graph(testing::dgx_like_spec(2, false));
  const CollectivePlan a = plan_collective(graph.spec(), CollectiveOp::SendRecv, {0, 8}, 1e9);
  const CollectivePlan b = plan_collective(graph.spec(), CollectiveOp::SendRecv, {1, 9}, 1e9);
  const SimgridPlatform platform(graph, flow_pairs({&a, &b}));
  const double alone_s = run_collective_streams(platform, graph, {{&a}})[0][0].duration_s();
  const auto together = run_collective_streams(platform, graph, {{&a}, {&b}});
  EXPECT_NEAR(together[0][0].duration_s(), alone_s, 1e-9);
  EXPECT_NEAR(together[1][0].duration_s(), alone_s, 1e-9);
}

TEST(CollectiveExecutor, FlowShortcutEqualsMaxMinWhenAFlowArrivesMidway)
{
  // Stream 0 sends 1 GB 0 -> 8 alone (the runner times it in closed form); stream 1 first sends 100 MB on the
  // disjoint rail 1, then 500 MB 0 -> 8 on the same links, which turns the first flow's remainder into a
  // SimGrid flow midway. Every start and end must equal the run with every flow in SimGrid from the start.
  const topo::ClusterGraph graph(testing::dgx_like_spec(2, false));
  const CollectivePlan a = plan_collective(graph.spec(), CollectiveOp::SendRecv, {0, 8}, 1e9);
  const CollectivePlan c = plan_collective(graph.spec(), CollectiveOp::SendRecv, {1, 9}, 1e8);
  const CollectivePlan b = plan_collective(graph.spec(), CollectiveOp::SendRecv, {0, 8}, 5e8);
  const SimgridPlatform platform(graph, flow_pairs({&a, &b, &c}));
  const double alone_s = run_collective_streams(platform, graph, {{&a}})[0][0].duration_s();
  const auto fast = run_collective_streams(platform, graph, {{&a}, {&c, &b}}, true);
  const auto reference = run_collective_streams(platform, graph, {{&a}, {&c, &b}}, false);
  EXPECT_GT(fast[0][0].duration_s(), alone_s * 1.2); // the second transfer really slowed the first down
  for (size_t s = 0; s < fast.size(); ++s)
    for (size_t p = 0; p < fast[s].size(); ++p) {
      EXPECT_NEAR(fast[s][p].start_s, reference[s][p].start_s, 1e-9 * reference[s][p].end_s) << s << "/" << p;
      EXPECT_NEAR(fast[s][p].end_s, reference[s][p].end_s, 1e-9 * reference[s][p].end_s) << s << "/" << p;
    }
}

TEST(CollectiveExecutor, FlowShortcutEqualsMaxMinForConcurrentCollectives)
{
  // Two all-reduces sharing the NICs, one started later: the same timings with and without the shortcut.
  const topo::ClusterGraph graph(testing::dgx_like_spec(2, false));
  const CollectivePlan a = plan_collective(graph.spec(), CollectiveOp::AllReduce, first_gpus(16), 1e9);
  const CollectivePlan small = plan_collective(graph.spec(), CollectiveOp::SendRecv, {3, 11}, 3e7);
  const CollectivePlan b = plan_collective(graph.spec(), CollectiveOp::AllReduce, first_gpus(16), 2e8);
  const SimgridPlatform platform(graph, flow_pairs({&a, &b, &small}));
  const auto fast = run_collective_streams(platform, graph, {{&small, &a}, {&b}}, true);
  const auto reference = run_collective_streams(platform, graph, {{&small, &a}, {&b}}, false);
  for (size_t s = 0; s < fast.size(); ++s)
    for (size_t p = 0; p < fast[s].size(); ++p)
      EXPECT_NEAR(fast[s][p].end_s, reference[s][p].end_s, 1e-9 * reference[s][p].end_s) << s << "/" << p;
}

TEST(CollectiveExecutor, StreamsRunTheirPlansBackToBack)
{
  const topo::ClusterGraph graph(testing::dgx_like_spec(1, true));
  const CollectivePlan p = plan_collective(graph.spec(), CollectiveOp::AllGather, first_gpus(8), 1e8);
  const SimgridPlatform platform(graph, flow_pairs({&p}));
  const auto t = run_collective_streams(platform, graph, {{&p, &p, &p}});
  EXPECT_DOUBLE_EQ(t[0][1].start_s, t[0][0].end_s);
  EXPECT_NEAR(t[0][2].duration_s(), t[0][0].duration_s(), 1e-12);
}

} // namespace
} // namespace gputwin::sim
