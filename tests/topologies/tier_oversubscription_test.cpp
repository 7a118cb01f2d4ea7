// Oversubscription per fabric tier (`fabric.oversubscription: [leaf, aggregation]`), each count computed by hand
// in the comment above it from the construction rules of topologies/README.md ("Fabric"). dgx-a100: 8 rails of
// 25 GB/s NICs, radix-40 switches, 25 GB/s switch links; leaves d = u = 20 when non-blocking.
#include "cluster_error.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gputwin::topo {
namespace {

using testing::error_of;

// The scalar, a list of one and a list with a non-blocking aggregation tier build the same graph, link by link.
TEST(TierOversubscription, ScalarAndListOfOneAreTheSameTree)
{
  for (const std::string ratio : {"1", "3"}) {
    const ClusterGraph scalar(load_cluster("dgx-a100", 200, {"fabric.oversubscription=" + ratio}));
    for (const std::string& list : {"[" + ratio + "]", "[" + ratio + ", 1]"}) {
      SCOPED_TRACE(list);
      const ClusterGraph tiers(load_cluster("dgx-a100", 200, {"fabric.oversubscription=" + list}));
      ASSERT_EQ(tiers.links().size(), scalar.links().size());
      for (size_t i = 0; i < scalar.links().size(); ++i)
        ASSERT_EQ(tiers.links()[i].name, scalar.links()[i].name) << i;
      EXPECT_EQ(tiers.summary().bisection_bytes_per_s, scalar.summary().bisection_bytes_per_s);
      for (int dst : {8, 800, 1599})
        EXPECT_EQ(tiers.route(0, dst), scalar.route(0, dst));
    }
  }
}

// 200 nodes need 8 x ceil(200/20) = 80 leaves > 40: 3 levels.
// Non-blocking: pods of 20 leaves -> 4 pods x 20 = 80 aggregation switches, 20 groups of 20 = 400 cores.
//   Bisection min(100 x 8 x 25 = 20000, 80 x 20 x 25 / 2 = 20000, 80 x 20 x 25 / 2 = 20000) = 20000 GB/s.
// Aggregation 3:1: d2 = floor(40 x 3/4) = 30 leaves per pod, u2 = floor(40/4) = 10 core ports ->
//   ceil(80/30) = 3 pods x 20 = 60 aggregation switches, 20 groups of 10 = 200 cores.
//   Bisection min(20000, 20000, 60 x 10 x 25 / 2 = 7500) = 7500 GB/s: the core tier limits it.
TEST(TierOversubscription, AggregationTierThinsTheCoreUplinks)
{
  const TopologySummary flat = ClusterGraph(load_cluster("dgx-a100", 200, {})).summary();
  EXPECT_EQ(flat.fabric_switches_per_level, (std::vector<int>{80, 80, 400}));
  EXPECT_DOUBLE_EQ(flat.bisection_bytes_per_s, 20000e9);

  const ClusterGraph graph(load_cluster("dgx-a100", 200, {"fabric.oversubscription=[1, 3]"}));
  EXPECT_EQ(graph.spec().fabric.oversubscription, 1);
  EXPECT_EQ(graph.spec().fabric.spine_oversubscription, 3);
  EXPECT_EQ(graph.fabric().leaves_per_pod, 30);
  EXPECT_EQ(graph.fabric().cores_per_group, 10);
  const TopologySummary s = graph.summary();
  EXPECT_EQ(s.fabric_switches_per_level, (std::vector<int>{80, 60, 200}));
  EXPECT_DOUBLE_EQ(s.bisection_bytes_per_s, 7500e9);
  // Each aggregation switch has 20 leaf links and 10 core links: half the non-blocking tree's 20.
  int agg_core_links = 0;
  for (const Link& link : graph.links())
    if (graph.vertices()[static_cast<size_t>(link.from)].level == 2 &&
        graph.vertices()[static_cast<size_t>(link.to)].level == 3)
      ++agg_core_links;
  EXPECT_EQ(agg_core_links, 60 * 10);
}

// A route across pods still goes leaf -> aggregation -> core -> aggregation -> leaf, on working links.
TEST(TierOversubscription, RoutesCrossThePodsThroughTheThinnerCoreTier)
{
  const ClusterGraph graph(load_cluster("dgx-a100", 200, {"fabric.oversubscription=[1, 3]"}));
  // Node 0 rail 0 is on leaf 0 (pod 0); node 199 rail 0 on leaf (199 / 20) x 8 = 72 (pod 2).
  const std::vector<int> path = graph.route(0, 199 * 8);
  int core_hops = 0;
  for (const int link : path)
    core_hops += graph.vertices()[static_cast<size_t>(graph.links()[static_cast<size_t>(link)].to)].level == 3;
  EXPECT_EQ(core_hops, 1);
}

// The 3-level tree holds radix pods of d2 leaves: 40 x 30 = 1200 leaves = 150 per rail = 3000 nodes at 3:1.
TEST(TierOversubscription, MostNodesFollowTheAggregationRatio)
{
  EXPECT_EQ(load_cluster("dgx-a100", 3000, {"fabric.oversubscription=[1, 3]"}).nodes, 3000);
  EXPECT_EQ(error_of("dgx-a100", 3001, {"fabric.oversubscription=[1, 3]"}),
            "dgx-a100.yaml (built-in):34:11: fabric.levels: 3001 nodes do not fit 3 levels of radix-40 switches "
            "(expected --nodes at most 3000, "
            "or a larger fabric.switch_radix)");
}

TEST(TierOversubscription, BadRatiosAreOneLineErrors)
{
  EXPECT_EQ(error_of("dgx-a100", 2, {"fabric.oversubscription=[1, 0]"}),
            "--set fabric.oversubscription: fabric.oversubscription.1: expected a positive number, got 0");
  EXPECT_EQ(error_of("dgx-a100", 2, {"fabric.oversubscription=[1, 2, 3]"}),
            "--set fabric.oversubscription: expected a positive number or a list of 1 to 2 positive numbers, e.g. "
            "[2, 1], got a list of 3");
  EXPECT_EQ(error_of("dgx-a100", 2, {"fabric.oversubscription=[]"}),
            "--set fabric.oversubscription: expected a positive number or a list of 1 to 2 positive numbers, e.g. "
            "[2, 1], got a list of 0");
  EXPECT_EQ(error_of("dgx-a100", 2, {"fabric.oversubscription=[1, fast]"}),
            "--set fabric.oversubscription: fabric.oversubscription.1: expected a positive number, got 'fast'");
  // 3 levels: 0.01 leaves an aggregation switch floor(40 x 0.01 / 1.01) = 0 ports down.
  EXPECT_EQ(error_of("dgx-a100", 2, {"fabric.oversubscription=[1, 0.01]"}),
            "--set fabric.oversubscription: 0.01 leaves a radix-40 aggregation switch 0 down and 40 up ports "
            "(expected a ratio leaving at least two down and one up)");
  // 2 levels: the aggregation ratio is unused and not checked against the ports.
  EXPECT_EQ(load_cluster("dgx-a100", 2, {"fabric.levels=2", "fabric.oversubscription=[1, 0.01]"}).nodes, 2);
}

} // namespace
} // namespace gputwin::topo
