// Multi-plane fabrics and adaptive routing (topologies/cluster_spec.hpp FabricSpec::planes, ::adaptive_routing;
// ClusterGraph builds both as one routed tree, cluster_graph.cpp graph_shape): what max-min sharing of the graph's
// routes gives for flows that static D-mod-K routing puts on one uplink, and the equivalence of P planes with one
// tree of P times the link bandwidth.
#include "gputwin/sim/flow_set.hpp"
#include "gputwin/topologies/cluster_graph.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <string>
#include <vector>

namespace gputwin::sim {
namespace {

// When the last of `pairs` (src GPU, dst GPU), each moving `bytes` from time 0 on its route, ends under max-min
// sharing of the links at their line rates.
double last_end_s(const topo::ClusterGraph& graph, const std::vector<std::pair<int, int>>& pairs, double bytes)
{
  std::vector<double> capacity;
  for (const topo::Link& link : graph.links())
    capacity.push_back(link.bytes_per_s);
  FlowSet set(capacity);
  set.advance(0, [](int32_t, double) {}, [](int) {});
  for (const auto& [src, dst] : pairs) {
    const std::vector<int> route = graph.route(src, dst);
    set.add(route.data(), route.size(), bytes, 0);
  }
  double end_s = 0;
  while (true) {
    const double next = set.next_end_s();
    if (!(next < 1e30))
      break;
    end_s = next;
    set.advance(next, [](int32_t, double) {}, [](int) {});
  }
  return end_s;
}

// dgx-h100 with 3:1 leaves: radix 64 = 48 down + 16 up, so rail 0's leaf 0 holds nodes 0-47 and leaf 1 nodes 48-95.
topo::ClusterSpec oversubscribed(bool adaptive)
{
  std::vector<std::string> overrides{"fabric.oversubscription=3"};
  if (adaptive)
    overrides.push_back("fabric.adaptive_routing=true");
  return topo::load_cluster("dgx-h100", 96, overrides);
}

TEST(FabricSpreading, AdaptiveRoutingSpreadsFlowsThatStaticRoutingPutsOnOneUplink)
{
  // GPU 0 of nodes 0 and 1 (leaf 0) to GPU 0 of nodes 48 and 64 (leaf 1): destination indices 48 and 64, both 0
  // mod 16 uplinks, so D-mod-K sends both over leaf 0's uplink 0 and spine 0: 50 GB/s for the two. Sprayed over the
  // 16 uplinks they are limited by their own NICs only: twice as fast.
  const std::vector<std::pair<int, int>> pairs{{0, 48 * 8}, {8, 64 * 8}};
  const topo::ClusterGraph fixed(oversubscribed(false)), adaptive(oversubscribed(true));
  const std::vector<int> a = fixed.route(0, 48 * 8), b = fixed.route(8, 64 * 8);
  int shared = 0;
  for (const int link : a)
    shared += std::count(b.begin(), b.end(), link) > 0 && fixed.links()[static_cast<size_t>(link)].kind ==
                                                             topo::LinkKind::Fabric;
  EXPECT_EQ(shared, 2) << "the uplink and the spine's downlink";
  const double bytes = 1e9;
  const double nic_s = bytes / 50e9;
  EXPECT_NEAR(last_end_s(fixed, pairs, bytes), 2 * nic_s, 1e-12);
  EXPECT_NEAR(last_end_s(adaptive, pairs, bytes), nic_s, 1e-12);
  // The bundle a route sprays over: the leaf's 16 uplinks of 400 Gb/s.
  for (const int link : adaptive.route(0, 48 * 8))
    if (adaptive.links()[static_cast<size_t>(link)].kind == topo::LinkKind::Fabric) {
      EXPECT_DOUBLE_EQ(adaptive.links()[static_cast<size_t>(link)].bytes_per_s, 16 * 50e9);
    }
  // Physical counts are the tree's: 16 leaves (2 a rail) and 16 spines, 96 x 8 NIC cables + 16 x 16 uplinks.
  EXPECT_EQ(adaptive.summary().fabric_switches, fixed.summary().fabric_switches);
  EXPECT_EQ(adaptive.summary().physical_links, fixed.summary().physical_links);
  EXPECT_DOUBLE_EQ(adaptive.summary().bisection_bytes_per_s, fixed.summary().bisection_bytes_per_s);
}

TEST(FabricSpreading, AdaptiveRoutingAcrossPodsOfAThreeLevelTree)
{
  // dgx-a100 at radix 8: 4 nodes a leaf, leaf (node / 4) x 8 + rail, pods of 4 leaves: rail 0 of node 0 is on
  // leaf 0 of pod 0, of node 12 on leaf 24 ("leaf.r0.3") of pod 6. The route between them sprays over pod 0's
  // aggregation tier, the cores and pod 6's aggregation tier, each one bundle.
  const topo::ClusterGraph g(topo::load_cluster("dgx-a100", 16, {"fabric.switch_radix=8", "fabric.adaptive_routing=true"}));
  ASSERT_EQ(g.fabric().levels, 3);
  std::vector<std::string> hops;
  for (const int link : g.route(0, 12 * 8))
    if (g.links()[static_cast<size_t>(link)].kind == topo::LinkKind::Fabric)
      hops.push_back(g.links()[static_cast<size_t>(link)].name);
  EXPECT_EQ(hops, (std::vector<std::string>{"leaf.r0.0->agg.p0", "agg.p0->cores", "cores->agg.p6", "agg.p6->leaf.r0.3"}));
  // Each bundle carries what it stands for: a leaf's 4 uplinks; a pod's 4 aggregation switches' 4 core uplinks.
  for (const int link : g.route(0, 12 * 8)) {
    const topo::Link& l = g.links()[static_cast<size_t>(link)];
    if (l.kind == topo::LinkKind::Fabric) {
      EXPECT_DOUBLE_EQ(l.bytes_per_s, (l.name.find("cores") != std::string::npos ? 16 : 4) * 25e9) << l.name;
    }
  }
}

TEST(FabricSpreading, PlanesAreOneTreeOfTheirSummedBandwidth)
{
  // Two planes of 200 Gb/s links carry what one tree of 400 Gb/s links carries, flow for flow; the physical counts
  // are two trees' (and each NIC's two ports).
  const topo::ClusterGraph one(topo::load_cluster("dgx-h100", 96, {"fabric.oversubscription=3"}));
  const topo::ClusterGraph two(
      topo::load_cluster("dgx-h100", 96, {"fabric.oversubscription=3", "fabric.planes=2", "fabric.link_gbits_per_s=200"}));
  const std::vector<std::pair<int, int>> pairs{{0, 48 * 8}, {8, 64 * 8}, {16, 49 * 8 + 3}};
  EXPECT_DOUBLE_EQ(last_end_s(two, pairs, 1e9), last_end_s(one, pairs, 1e9));
  EXPECT_EQ(two.summary().fabric_switches, 2 * one.summary().fabric_switches);
  EXPECT_DOUBLE_EQ(two.summary().bisection_bytes_per_s, one.summary().bisection_bytes_per_s);
  const int node_links = one.summary().physical_links - (96 * 8 + 16 * 16); // NVLink and PCIe (16 leaves)
  EXPECT_EQ(two.summary().physical_links, node_links + 2 * (96 * 8 + 16 * 16));
}

TEST(FabricSpreading, PlaneCountIsChecked)
{
  try {
    (void)topo::load_cluster("dgx-h100", 2, {"fabric.planes=0"});
    FAIL() << "0 planes accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("fabric.planes"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace gputwin::sim
