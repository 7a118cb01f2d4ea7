// The graph itself: vertex names, link kinds and bandwidths, Graphviz text, and the topologies it refuses.
#include "gputwin/common/input_error.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <gtest/gtest.h>

#include <set>

namespace gputwin::topo {
namespace {

std::string error_of(const ClusterSpec& spec)
{
  try {
    ClusterGraph graph(spec);
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    return e.what();
  }
  return "(no error)";
}

TEST(ClusterGraph, VerticesAndLinksOfTwoDgxA100Nodes)
{
  const ClusterGraph g(load_cluster("dgx-a100", 2, {}));
  // Per node 8 GPUs + 1 NVSwitch + 4 PCIe switches + 8 NICs = 21; 8 leaves + 20 spines.
  ASSERT_EQ(g.vertices().size(), 2u * 21 + 28);
  std::set<std::string> names;
  for (const Vertex& v : g.vertices())
    EXPECT_TRUE(names.insert(v.name).second) << v.name;
  EXPECT_EQ(g.vertices()[static_cast<size_t>(g.gpu_vertex(13))].name, "n1.gpu5");
  EXPECT_EQ(g.node_of_gpu(13), 1);
  const Vertex& leaf = g.vertices()[2 * 21 + 5];
  EXPECT_EQ(leaf.name, "leaf.r5.0");
  EXPECT_EQ(leaf.kind, VertexKind::FabricSwitch);
  EXPECT_EQ(leaf.level, 1);
  EXPECT_EQ(leaf.node, -1);
  for (const Link& link : g.links()) {
    const double expected = link.kind == LinkKind::Nvlink ? 300e9 : link.kind == LinkKind::Pcie ? 31.5e9 : 25e9;
    EXPECT_DOUBLE_EQ(link.bytes_per_s, expected) << link.name;
    const double latency = link.kind == LinkKind::Nvlink        ? 0.35e-6
                           : link.kind == LinkKind::Pcie        ? 0.5e-6
                           : link.kind == LinkKind::NicToFabric ? 1e-6 + 0.13e-6 / 2 // half the leaf's latency
                                                                : 0.13e-6;
    EXPECT_DOUBLE_EQ(link.latency_s, latency) << link.name;
  }
  // NIC n hangs off the PCIe switch of GPU n (switch n / 2), as the GPU does.
  EXPECT_EQ(g.links()[static_cast<size_t>(g.route(5, 13)[1])].name, "n0.pcie2->n0.nic5");
}

// A route pays the switch latency (0.13 us on dgx-a100) once for every switch it crosses: between two nodes under
// one rail leaf once, between leaves three times (leaf, spine, leaf); the rest is PCIe (0.5 us) twice and the NIC
// (1 us) once on each side.
TEST(ClusterGraph, RoutesPayOneSwitchLatencyPerSwitchCrossed)
{
  const ClusterGraph g(load_cluster("dgx-a100", 21, {})); // 20 nodes a leaf (radix 40, non-blocking): node 20 apart
  const double ends_s = 2 * (0.5e-6 + 0.5e-6 + 1e-6);
  EXPECT_NEAR(g.path_latency_s(g.route(0, 8)), ends_s + 0.13e-6, 1e-15);        // n0.gpu0 -> n1.gpu0: one leaf
  EXPECT_NEAR(g.path_latency_s(g.route(0, 20 * 8)), ends_s + 3 * 0.13e-6, 1e-15); // -> n20.gpu0: leaf, spine, leaf
  EXPECT_NEAR(g.path_latency_s(g.route(0, 1)), 2 * 0.35e-6, 1e-15);              // NVLink: no fabric switch
}

TEST(ClusterGraph, HopCountsByBreadthFirstSearch)
{
  const ClusterGraph g(load_cluster("dgx-a100", 1, {}));
  const std::vector<int> hops = g.hop_counts(g.gpu_vertex(0));
  EXPECT_EQ(hops[static_cast<size_t>(g.gpu_vertex(0))], 0);
  EXPECT_EQ(hops[static_cast<size_t>(g.gpu_vertex(7))], 2); // through the NVSwitch (or two PCIe hops)
}

TEST(ClusterGraph, DotHasOneBoxPerNodeAndOneEdgePerLink)
{
  const ClusterGraph g(load_cluster("dgx-a100", 2, {}));
  const std::string dot = g.dot();
  EXPECT_EQ(dot.rfind("graph \"dgx-a100\" {\n", 0), 0u);
  EXPECT_NE(dot.find("subgraph \"cluster_n0\" {"), std::string::npos);
  EXPECT_NE(dot.find("subgraph \"cluster_n1\" {"), std::string::npos);
  EXPECT_NE(dot.find("\"n0.gpu0\" -- \"n0.nvswitch\" [label=\"300 GB/s\"];"), std::string::npos);
  EXPECT_NE(dot.find("\"n0.gpu0\" -- \"n0.pcie0\" [label=\"31.5 GB/s\"];"), std::string::npos);
  EXPECT_NE(dot.find("\"leaf.r0.0\" -- \"spine.0\" [label=\"25 GB/s\"];"), std::string::npos);
  size_t edges = 0;
  for (size_t at = dot.find(" -- "); at != std::string::npos; at = dot.find(" -- ", at + 1))
    ++edges;
  EXPECT_EQ(edges, 224u);
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
}

TEST(ClusterGraph, DisconnectedTopologyIsRefused)
{
  EXPECT_EQ(error_of(load_cluster("dgx-a100", 2, {"node.nics.count=0"})),
            "cluster 'dgx-a100': disconnected topology: n1.gpu0 is unreachable from n0.gpu0 (expected NICs and a "
            "fabric joining the nodes)");
  EXPECT_EQ(error_of(load_cluster("dgx-a100", 1, {"node.nics.count=0"})), "(no error)"); // one node needs no NIC
}

TEST(ClusterGraph, SpecsBuiltInCodeAreChecked)
{
  ClusterSpec spec = load_cluster("dgx-a100", 2, {});
  spec.nic.bytes_per_s = 0;
  EXPECT_EQ(error_of(spec), "cluster 'dgx-a100': node.nics.gbits_per_s: expected a positive number, got 0");
  spec = load_cluster("dgx-a100", 2, {});
  spec.nodes = 0;
  EXPECT_EQ(error_of(spec), "cluster 'dgx-a100': nodes: expected an integer from 1 to 1048576, got 0");
  spec = load_cluster("dgx-a100", 2, {});
  spec.nic.gpus.pop_back();
  EXPECT_EQ(error_of(spec), "cluster 'dgx-a100': node.nics.gpus: expected 8 entries (one list of local GPUs per "
                            "NIC, node.nics.count), got 7");
}

} // namespace
} // namespace gputwin::topo
