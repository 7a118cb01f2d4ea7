// Routes: every route is a chain of directed links from the source GPU to the destination GPU; intra-node
// routes are NVLink up and down; rail-aligned inter-node routes are as short as a breadth-first search finds;
// the hand-checked paths of the README (rail, PXN, spine and core choice) come out link by link.
#include "gputwin/topologies/cluster_graph.hpp"

#include <gtest/gtest.h>

#include <set>

namespace gputwin::topo {
namespace {

const std::string tiny = GPUTWIN_TEST_DATA_DIR "/clusters/tiny.yaml";

ClusterGraph graph_of(const std::string& cluster, int nodes, const std::vector<std::string>& sets = {})
{
  return ClusterGraph(load_cluster(cluster, nodes, sets));
}

// "" when `route` is a valid chain from src to dst crossing no link twice; otherwise what is wrong.
std::string chain_problem(const ClusterGraph& g, int src, int dst, const std::vector<int>& route)
{
  const std::vector<Link>& links = g.links();
  if (route.empty())
    return "empty route";
  std::set<int> seen;
  int at = g.gpu_vertex(src);
  for (int id : route) {
    if (id < 0 || id >= static_cast<int>(links.size()))
      return "link id " + std::to_string(id) + " out of range";
    if (links[static_cast<size_t>(id)].from != at)
      return "link " + links[static_cast<size_t>(id)].name + " does not start where the last one ended";
    if (!seen.insert(id).second)
      return "link " + links[static_cast<size_t>(id)].name + " crossed twice";
    at = links[static_cast<size_t>(id)].to;
  }
  return at == g.gpu_vertex(dst) ? "" : "route ends at " + g.vertices()[static_cast<size_t>(at)].name;
}

std::vector<std::string> names(const ClusterGraph& g, const std::vector<int>& route)
{
  std::vector<std::string> result;
  for (int id : route)
    result.push_back(g.links()[static_cast<size_t>(id)].name);
  return result;
}

void expect_all_routes_valid(const ClusterGraph& g, int src_step = 1)
{
  const int gpus = g.gpu_count();
  const int per_node = g.spec().gpus_per_node;
  for (int src = 0; src < gpus; src += src_step) {
    for (int dst = 0; dst < gpus; ++dst) {
      if (src == dst)
        continue;
      const std::vector<int> route = g.route(src, dst);
      const std::string problem = chain_problem(g, src, dst, route);
      ASSERT_EQ(problem, "") << g.spec().name << " " << src << " -> " << dst;
      if (src / per_node == dst / per_node) {
        ASSERT_EQ(route.size(), 2u);
        ASSERT_EQ(g.links()[static_cast<size_t>(route[0])].kind, LinkKind::Nvlink);
        ASSERT_EQ(g.links()[static_cast<size_t>(route[1])].kind, LinkKind::Nvlink);
      }
    }
  }
}

// Routes between GPUs of the same local index (their own rail: no PXN) have the fewest links possible.
void expect_rail_routes_shortest(const ClusterGraph& g)
{
  const int per_node = g.spec().gpus_per_node;
  for (int src = 0; src < g.gpu_count(); ++src) {
    const std::vector<int> hops = g.hop_counts(g.gpu_vertex(src));
    for (int dst = src % per_node; dst < g.gpu_count(); dst += per_node) {
      if (dst / per_node == src / per_node)
        continue;
      ASSERT_EQ(static_cast<int>(g.route(src, dst).size()), hops[static_cast<size_t>(g.gpu_vertex(dst))])
          << g.spec().name << " " << src << " -> " << dst;
    }
  }
}

TEST(Route, EveryRouteIsAChainOfDirectedLinks)
{
  expect_all_routes_valid(graph_of("dgx-a100", 1));
  expect_all_routes_valid(graph_of("dgx-a100", 2));
  expect_all_routes_valid(graph_of("dgx-a100", 64));
  expect_all_routes_valid(graph_of("dgx-a100", 16, {"fabric.rail_optimized=false"}));
  expect_all_routes_valid(graph_of("dgx-a100", 16, {"fabric.switch_radix=8"})); // 3 levels, 4 pods
  expect_all_routes_valid(graph_of("dgx-a100", 128), 37);                       // 3 levels, sampled sources
  expect_all_routes_valid(graph_of("dgx-h100", 8));
  expect_all_routes_valid(graph_of(tiny, 8)); // 3 levels, 2 GPUs per NIC
  expect_all_routes_valid(graph_of(tiny, 3, {"node.nics.gpus=[[0, 2], [1, 3]]"}));
}

TEST(Route, RailAlignedRoutesAreShortest)
{
  expect_rail_routes_shortest(graph_of("dgx-a100", 2));
  expect_rail_routes_shortest(graph_of("dgx-a100", 64));
  expect_rail_routes_shortest(graph_of("dgx-a100", 16, {"fabric.switch_radix=8"}));
  expect_rail_routes_shortest(graph_of("dgx-a100", 16, {"fabric.rail_optimized=false"}));
  expect_rail_routes_shortest(graph_of(tiny, 8));
}

TEST(Route, DeterministicAndLinksPaired)
{
  const ClusterGraph a = graph_of("dgx-a100", 64);
  const ClusterGraph b = graph_of("dgx-a100", 64);
  for (int src = 0; src < a.gpu_count(); src += 13) {
    for (int dst = 0; dst < a.gpu_count(); dst += 7) {
      if (src == dst)
        continue;
      ASSERT_EQ(names(a, a.route(src, dst)), names(b, b.route(src, dst)));
    }
  }
  for (size_t id = 0; id < a.links().size(); id += 2) { // 2k and 2k + 1: one physical link, both directions
    const Link& there = a.links()[id];
    const Link& back = a.links()[id + 1];
    ASSERT_EQ(there.from, back.to);
    ASSERT_EQ(there.to, back.from);
    ASSERT_EQ(there.kind, back.kind);
    ASSERT_EQ(there.bytes_per_s, back.bytes_per_s);
  }
}

TEST(Route, IntraNodeIsNvlinkUpAndDown)
{
  const ClusterGraph g = graph_of("dgx-a100", 2);
  EXPECT_EQ(names(g, g.route(11, 14)), (std::vector<std::string>{"n1.gpu3->n1.nvswitch", "n1.nvswitch->n1.gpu6"}));
}

TEST(Route, SameLeafRail)
{
  // GPU 0 of node 0 to GPU 0 of node 1: rail 0, both NICs on leaf.r0.0.
  const ClusterGraph g = graph_of("dgx-a100", 2);
  EXPECT_EQ(names(g, g.route(0, 8)),
            (std::vector<std::string>{"n0.gpu0->n0.pcie0", "n0.pcie0->n0.nic0", "n0.nic0->leaf.r0.0",
                                      "leaf.r0.0->n1.nic0", "n1.nic0->n1.pcie0", "n1.pcie0->n1.gpu0"}));
  // GPU 1 shares PCIe switch 0 with NIC 0: no NVLink hop before the NIC.
  EXPECT_EQ(names(g, g.route(1, 8))[0], "n0.gpu1->n0.pcie0");
}

TEST(Route, PxnCrossesNvlinkToTheRailGpuFirst)
{
  // GPU 2 (PCIe switch 1) to n1.gpu0 (rail 0, NIC 0 on PCIe switch 0): NVLink to GPU 0, then its PCIe path.
  const ClusterGraph g = graph_of("dgx-a100", 2);
  EXPECT_EQ(names(g, g.route(2, 8)),
            (std::vector<std::string>{"n0.gpu2->n0.nvswitch", "n0.nvswitch->n0.gpu0", "n0.gpu0->n0.pcie0",
                                      "n0.pcie0->n0.nic0", "n0.nic0->leaf.r0.0", "leaf.r0.0->n1.nic0",
                                      "n1.nic0->n1.pcie0", "n1.pcie0->n1.gpu0"}));
}

TEST(Route, DestinationOffItsNicSwitchEndsOverNvlink)
{
  // tiny with NIC 0 serving GPUs 0 and 2: NIC 0 hangs off GPU 0's PCIe switch 0, GPU 2 is on switch 1. Two
  // nodes: NICs in node-major order, 2 per leaf (node n on leaf n), 2 leaves: 2 levels with u = 2 spines.
  // n1.gpu2 is on rail 0: e = 1 x 2 + 0 = 2, spine 2 mod 2 = 0.
  const ClusterGraph g = graph_of(tiny, 2, {"node.nics.gpus=[[0, 2], [1, 3]]"});
  EXPECT_EQ(names(g, g.route(0, 6)),
            (std::vector<std::string>{"n0.gpu0->n0.pcie0", "n0.pcie0->n0.nic0", "n0.nic0->leaf.0", "leaf.0->spine.0",
                                      "spine.0->leaf.1", "leaf.1->n1.nic0", "n1.nic0->n1.pcie0", "n1.pcie0->n1.gpu0",
                                      "n1.gpu0->n1.nvswitch", "n1.nvswitch->n1.gpu2"}));
}

TEST(Route, SpineChosenByDestination)
{
  // 64 nodes: node 21 is in rail group 1 (nodes 20..39): leaf 1 x 8 + 0 = 8, down port 21 mod 20 = 1.
  // e = 8 x 20 + 1 = 161, spine 161 mod 20 = 1.
  const ClusterGraph g = graph_of("dgx-a100", 64);
  const std::vector<std::string> path = names(g, g.route(0, 21 * 8));
  ASSERT_EQ(path.size(), 8u);
  EXPECT_EQ(path[2], "n0.nic0->leaf.r0.0");
  EXPECT_EQ(path[3], "leaf.r0.0->spine.1");
  EXPECT_EQ(path[4], "spine.1->leaf.r0.1");
  EXPECT_EQ(path[5], "leaf.r0.1->n21.nic0");
}

TEST(Route, CoreChosenByDestination)
{
  // 128 nodes, 3 levels, pods of 20 leaves. n127.gpu0: group 127 / 20 = 6, leaf 6 x 8 + 0 = 48 in pod 2.
  // Down port 127 mod 20 = 7, e = 48 x 20 + 7 = 967: aggregation switch 967 mod 20 = 7, core (967 / 20) mod 20 = 8
  // of group 7 = core.148.
  const ClusterGraph g = graph_of("dgx-a100", 128);
  const std::vector<std::string> path = names(g, g.route(0, 127 * 8));
  ASSERT_EQ(path.size(), 10u);
  EXPECT_EQ(path[2], "n0.nic0->leaf.r0.0");
  EXPECT_EQ(path[3], "leaf.r0.0->agg.p0.7");
  EXPECT_EQ(path[4], "agg.p0.7->core.148");
  EXPECT_EQ(path[5], "core.148->agg.p2.7");
  EXPECT_EQ(path[6], "agg.p2.7->leaf.r0.6");
  EXPECT_EQ(path[7], "leaf.r0.6->n127.nic0");
  // n20.gpu0: leaf 8, down port 0, still pod 0: up to aggregation switch (8 x 20 + 0) mod 20 = 0 and straight down.
  const std::vector<std::string> same_pod = names(g, g.route(0, 20 * 8));
  ASSERT_EQ(same_pod.size(), 8u);
  EXPECT_EQ(same_pod[3], "leaf.r0.0->agg.p0.0");
  EXPECT_EQ(same_pod[4], "agg.p0.0->leaf.r0.1");
}

// Every rail of a non-blocking rail-optimized tree reaches its destinations through every spine (D-mod-K: the
// destinations under one leaf use distinct uplinks), as the tree without rails does; the old rule
// (dst_node x nics + r) mod u sent each rail through u / gcd(u, nics) spines only (4 of 32 on dgx-h100).
TEST(Route, EveryRailSpreadsOverEverySpine)
{
  for (const char* cluster : {"dgx-h100", "dgx-a100"}) {
    const ClusterGraph g = graph_of(cluster, 64);
    const int per_node = g.spec().gpus_per_node;
    for (int rail = 0; rail < g.spec().nic.count; ++rail) {
      std::set<std::string> uplinks;
      for (int node = 1; node < 64; ++node) {
        const std::vector<std::string> path = names(g, g.route(rail, node * per_node + rail));
        for (const std::string& link : path)
          if (link.rfind("leaf.r", 0) == 0 && link.find("->spine.") != std::string::npos)
            uplinks.insert(link);
      }
      // Destinations on the source's own leaf go straight down; the others over every uplink of the leaf.
      EXPECT_EQ(static_cast<int>(uplinks.size()), g.spec().fabric.switch_radix / 2) << cluster << " rail " << rail;
    }
  }
}

// Any one source leaf's flows to the d destinations of one other leaf (a shift permutation) share no uplink.
TEST(Route, ShiftPermutationUsesDistinctUplinks)
{
  const ClusterGraph g = graph_of("dgx-h100", 64); // 32 nodes per leaf: nodes 0..31 -> nodes 32..63
  std::set<std::string> uplinks;
  for (int node = 0; node < 32; ++node) {
    const std::vector<std::string> path = names(g, g.route(node * 8, (node + 32) * 8));
    ASSERT_EQ(path.size(), 8u);
    EXPECT_TRUE(uplinks.insert(path[3]).second) << path[3] << " carries two flows";
  }
}

} // namespace
} // namespace gputwin::topo
