// The flow runner's flow-set shortcut (sim/executor/flow_set.hpp): flows that have their links to themselves are
// timed by their own max-min solution instead of SimGrid's. First the solution by hand, then whole collectives
// against the all-SimGrid reference (FlowRunner::set_shortcut(false)). SimGrid allows one platform per process,
// so each test builds one (ctest runs every test in its own process).
#include "dgx_spec.hpp"

#include "gputwin/sim/collective_executor.hpp"
#include "gputwin/sim/flow_set.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <tuple>

namespace gputwin::sim {
namespace {

using testing::first_gpus;

struct Ended {
  int32_t flow;
  double end_s;
};

std::vector<Ended> run_to_end(FlowSet& set)
{
  std::vector<Ended> ended;
  while (!set.active_flows().empty())
    set.advance(set.next_end_s(), [&](int32_t f, double t) { ended.push_back({f, t}); }, [](int) {});
  return ended;
}

TEST(FlowSet, FlowsOnOneLinkShareItEqually)
{
  const std::vector<double> capacity{100.0};
  FlowSet set(capacity);
  const int link = 0;
  set.advance(0, [](int32_t, double) {}, [](int) {});
  set.add(&link, 1, 100, 0); // alone: 1 s; with the other: 50 B/s until the other ends
  set.add(&link, 1, 50, 0);
  const std::vector<Ended> ended = run_to_end(set);
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0].flow, 1);
  EXPECT_DOUBLE_EQ(ended[0].end_s, 1.0); // 50 B at 50 B/s
  EXPECT_EQ(ended[1].flow, 0);
  EXPECT_DOUBLE_EQ(ended[1].end_s, 1.5); // 50 B left at 100 B/s
}

TEST(FlowSet, AFlowLimitedElsewhereLeavesTheRestToTheOthers)
{
  // Link 0 (10 B/s) carries flows a and b; b also crosses link 1 (2 B/s), which limits it to 2 B/s, so a gets 8.
  const std::vector<double> capacity{10.0, 2.0};
  FlowSet set(capacity);
  const int a_links[] = {0};
  const int b_links[] = {0, 1};
  set.advance(0, [](int32_t, double) {}, [](int) {});
  set.add(a_links, 1, 80, 0);
  set.add(b_links, 2, 4, 0);
  EXPECT_DOUBLE_EQ(set.next_end_s(), 2.0); // b: 4 B at 2 B/s
  EXPECT_DOUBLE_EQ(set.remaining_bytes(0, 1.0), 72.0);
  std::vector<int> freed;
  set.advance(2.0, [](int32_t, double) {}, [&](int l) { freed.push_back(l); });
  EXPECT_EQ(freed, std::vector<int>{1}); // link 0 still carries a
  // a moved 16 B at 8 B/s, then moves the 64 left at 10 B/s.
  EXPECT_DOUBLE_EQ(set.next_end_s(), 2.0 + 64.0 / 10.0);
}

TEST(FlowSet, AFlowJoiningLaterSlowsTheOthersFromThen)
{
  const std::vector<double> capacity{10.0};
  FlowSet set(capacity);
  const int link = 0;
  set.advance(0, [](int32_t, double) {}, [](int) {});
  set.add(&link, 1, 100, 0);
  set.advance(5, [](int32_t, double) {}, [](int) {});
  set.add(&link, 1, 10, 5); // from 5 s both move at 5 B/s: the new one ends at 7 s, the first at 7 + 40/10
  const std::vector<Ended> ended = run_to_end(set);
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_DOUBLE_EQ(ended[0].end_s, 7.0);
  EXPECT_DOUBLE_EQ(ended[1].end_s, 11.0);
}

// Every flow's start and end, in a canonical order (the log's order depends on which actor ran first).
std::vector<std::tuple<int64_t, int, int, double, double>> sorted_records(const FlowLog& log)
{
  std::vector<std::tuple<int64_t, int, int, double, double>> r;
  for (const FlowRecord& f : log.flows)
    r.emplace_back(f.tag, f.src_gpu, f.dst_gpu, f.start_s, f.end_s);
  std::sort(r.begin(), r.end());
  return r;
}

// Runs `streams` with the shortcut and as the all-SimGrid reference; every plan's start and end and every flow's
// start and end must agree to 1e-9 (relative to the run's end).
void expect_shortcut_equals_reference(const SimgridPlatform& platform, const topo::ClusterGraph& graph,
                                      const std::vector<std::vector<const CollectivePlan*>>& streams)
{
  FlowLog fast_log, reference_log;
  const auto fast = run_collective_streams(platform, graph, streams, true, &fast_log);
  const auto reference = run_collective_streams(platform, graph, streams, false, &reference_log);
  double end_s = 0;
  for (const auto& stream : reference)
    for (const PlanTiming& t : stream)
      end_s = std::max(end_s, t.end_s);
  ASSERT_GT(end_s, 0);
  for (size_t s = 0; s < fast.size(); ++s)
    for (size_t p = 0; p < fast[s].size(); ++p) {
      EXPECT_NEAR(fast[s][p].start_s, reference[s][p].start_s, 1e-9 * end_s) << s << "/" << p;
      EXPECT_NEAR(fast[s][p].end_s, reference[s][p].end_s, 1e-9 * end_s) << s << "/" << p;
    }
  const auto a = sorted_records(fast_log);
  const auto b = sorted_records(reference_log);
  ASSERT_EQ(a.size(), b.size());
  // The two runs start at different simulated times: compare each flow relative to its run's first start.
  const double a0 = fast_log.flows.empty() ? 0 : std::get<3>(a.front());
  const double b0 = reference_log.flows.empty() ? 0 : std::get<3>(b.front());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(std::get<0>(a[i]), std::get<0>(b[i]));
    ASSERT_EQ(std::get<1>(a[i]), std::get<1>(b[i]));
    ASSERT_EQ(std::get<2>(a[i]), std::get<2>(b[i]));
    EXPECT_NEAR(std::get<3>(a[i]) - a0, std::get<3>(b[i]) - b0, 1e-9 * end_s) << i;
    EXPECT_NEAR(std::get<4>(a[i]) - a0, std::get<4>(b[i]) - b0, 1e-9 * end_s) << i;
  }
}

TEST(FlowSetShortcut, RingAllReduceAloneEqualsMaxMin)
{
  // 4 nodes: ring flows share NVLinks and NICs with each other (one flow set), nothing else runs.
  const topo::ClusterGraph graph(testing::dgx_like_spec(4, false));
  const CollectivePlan a = plan_collective(graph.spec(), CollectiveOp::AllReduce, first_gpus(32), 1e9,
                                           {NcclAlgorithm::Ring, NcclProtocol::Simple});
  const CollectivePlan t = plan_collective(graph.spec(), CollectiveOp::AllReduce, first_gpus(32), 3e8,
                                           {NcclAlgorithm::Tree, NcclProtocol::Simple});
  const SimgridPlatform platform(graph, flow_pairs({&a, &t}));
  expect_shortcut_equals_reference(platform, graph, {{&a, &t}});
}

TEST(FlowSetShortcut, AllToAllAloneEqualsMaxMin)
{
  // A flow per ordered pair over 3 nodes: intra-node flows on NVLink, the rest on NICs and the fabric, with
  // different latencies, so the set's flows join it at different times.
  const topo::ClusterGraph graph(testing::dgx_like_spec(3, false));
  const CollectivePlan a = plan_collective(graph.spec(), CollectiveOp::AllToAll, first_gpus(24), 5e8);
  const SimgridPlatform platform(graph, flow_pairs({&a}));
  expect_shortcut_equals_reference(platform, graph, {{&a}});
}

TEST(FlowSetShortcut, AllToAllWithForeignTrafficEqualsMaxMin)
{
  // A second stream sends on the all-to-all's links midway (after a short transfer on a disjoint rail) and a ring
  // all-reduce of half the GPUs overlaps it: the flow sets merge when they meet.
  const topo::ClusterGraph graph(testing::dgx_like_spec(2, false));
  const CollectivePlan a = plan_collective(graph.spec(), CollectiveOp::AllToAll, first_gpus(16), 4e8);
  const CollectivePlan c = plan_collective(graph.spec(), CollectiveOp::SendRecv, {1, 9}, 2e7);
  const CollectivePlan b = plan_collective(graph.spec(), CollectiveOp::SendRecv, {0, 8}, 1e8);
  const CollectivePlan r = plan_collective(graph.spec(), CollectiveOp::AllReduce, {0, 1, 2, 3, 8, 9, 10, 11}, 2e8,
                                           {NcclAlgorithm::Ring, NcclProtocol::Simple});
  const SimgridPlatform platform(graph, flow_pairs({&a, &b, &c, &r}));
  expect_shortcut_equals_reference(platform, graph, {{&a}, {&c, &b}, {&c, &c, &r}});
}

TEST(FlowSetShortcut, ConcurrentRingAllReducesEqualMaxMin)
{
  // Two ring all-reduces on the same GPUs, the second started after a send: the first's flow set merges with
  // its flows midway; then a third runs alone again (a new flow set).
  const topo::ClusterGraph graph(testing::dgx_like_spec(2, false));
  const CollectivePlan a = plan_collective(graph.spec(), CollectiveOp::AllReduce, first_gpus(16), 1e9,
                                           {NcclAlgorithm::Ring, NcclProtocol::Simple});
  const CollectivePlan small = plan_collective(graph.spec(), CollectiveOp::SendRecv, {3, 11}, 3e7);
  const CollectivePlan b = plan_collective(graph.spec(), CollectiveOp::AllReduce, first_gpus(16), 2e8,
                                           {NcclAlgorithm::Ring, NcclProtocol::Simple});
  const SimgridPlatform platform(graph, flow_pairs({&a, &b, &small}));
  expect_shortcut_equals_reference(platform, graph, {{&a, &a}, {&small, &b}});
}

} // namespace
} // namespace gputwin::sim

namespace gputwin::sim {
namespace {

TEST(FlowSetShortcut, TwoRunsOnOnePlatformEachGetTheNetworkActor)
{
  // The network's daemon actor ends with each SimGrid run's last actor; the next run on the same platform starts a
  // new one and times the same streams the same way.
  const topo::ClusterGraph graph(testing::dgx_like_spec(2, false));
  const CollectivePlan a = plan_collective(graph.spec(), CollectiveOp::AllReduce, first_gpus(16), 1e9,
                                           {NcclAlgorithm::Ring, NcclProtocol::Simple});
  const CollectivePlan b = plan_collective(graph.spec(), CollectiveOp::SendRecv, {3, 11}, 3e7);
  const SimgridPlatform platform(graph, flow_pairs({&a, &b}));
  const auto first = run_collective_streams(platform, graph, {{&a}, {&b, &a}}, true);
  const auto second = run_collective_streams(platform, graph, {{&a}, {&b, &a}}, true);
  ASSERT_EQ(first.size(), second.size());
  for (size_t s = 0; s < first.size(); ++s)
    for (size_t p = 0; p < first[s].size(); ++p) {
      EXPECT_NEAR(first[s][p].start_s, second[s][p].start_s, 1e-9 * first[s][p].end_s) << s << "/" << p;
      EXPECT_NEAR(first[s][p].end_s, second[s][p].end_s, 1e-9 * first[s][p].end_s) << s << "/" << p;
      EXPECT_GT(second[s][p].end_s, second[s][p].start_s);
    }
}

} // namespace
} // namespace gputwin::sim
