// NVLink domains larger than a node (node.nvlink.domain_gpus): GB200 NVL72 as 18 trays of 4 GPUs in one domain per
// rack; routes between trays of one domain are NVLink only, routes between domains cross the NICs and the fat tree;
// a domain that is not a whole number of nodes is an error naming the file and the field; without the field the
// domain is the node, as before.
#include "gputwin/common/input_error.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace gputwin::topo {
namespace {

const std::string data_dir = GPUTWIN_TEST_DATA_DIR "/clusters/";

std::vector<LinkKind> kinds(const ClusterGraph& g, const std::vector<int>& route)
{
  std::vector<LinkKind> out;
  for (const int id : route)
    out.push_back(g.links()[static_cast<size_t>(id)].kind);
  return out;
}

std::string error_of(const std::string& cluster, const std::vector<std::string>& sets)
{
  try {
    load_cluster(cluster, 0, sets);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

// GB200 NVL72 reference architecture: a compute tray holds 4 GPUs and 4 ConnectX-7 NICs, 18 trays share the rack's
// NVLink domain (the cluster file's sources).
TEST(NvlinkDomain, Gb200Nvl72IsEighteenTraysOfFourGpusInOneDomain)
{
  const ClusterSpec s = load_cluster("gb200-nvl72", 0, {});
  EXPECT_EQ(s.nodes, 18); // one rack by default
  EXPECT_EQ(s.gpus_per_node, 4);
  EXPECT_EQ(s.nic.count, 4);
  EXPECT_DOUBLE_EQ(s.nic.bytes_per_s, 50e9); // ConnectX-7, 400 Gb/s
  EXPECT_EQ(s.domain_gpus(), 72);
  EXPECT_EQ(s.nodes_per_domain(), 18);
  EXPECT_EQ(s.nvlink_domains(), 1);
  EXPECT_DOUBLE_EQ(s.nvlink.bytes_per_s, 900e9); // NVLink 5, per GPU and direction

  const TopologySummary four_racks = ClusterGraph(load_cluster("gb200-nvl72", 72, {})).summary();
  EXPECT_EQ(four_racks.gpus, 288);
  EXPECT_EQ(four_racks.nvlink_domain_gpus, 72);
  EXPECT_EQ(four_racks.nvlink_domains, 4);
  EXPECT_EQ(four_racks.nics, 288);          // 4 per tray
  EXPECT_EQ(four_racks.nvswitch_chips, 72); // 18 per rack
}

TEST(NvlinkDomain, SameDomainCrossTrayRouteIsNvlinkOnly)
{
  const ClusterGraph g(load_cluster("gb200-nvl72", 36, {})); // two racks
  for (const auto& [src, dst] : std::vector<std::pair<int, int>>{{0, 71}, {5, 40}, {72, 143}, {3, 4}}) {
    ASSERT_NE(g.node_of_gpu(src), g.node_of_gpu(dst)) << src << " -> " << dst;
    const std::vector<int> route = g.route(src, dst);
    EXPECT_EQ(kinds(g, route), (std::vector<LinkKind>{LinkKind::Nvlink, LinkKind::Nvlink})) << src << " -> " << dst;
  }
  const std::vector<int> route = g.route(0, 71);
  EXPECT_EQ(g.links()[static_cast<size_t>(route[0])].name, "n0.gpu0->nvl0.nvswitch");
  EXPECT_EQ(g.links()[static_cast<size_t>(route[1])].name, "nvl0.nvswitch->n17.gpu3");
  EXPECT_EQ(g.links()[static_cast<size_t>(g.route(72, 143)[0])].name, "n18.gpu0->nvl1.nvswitch");
}

TEST(NvlinkDomain, TwoRackRouteCrossesTheFabric)
{
  const ClusterGraph g(load_cluster("gb200-nvl72", 72, {})); // four racks: trays 0-31 and 32-63 on different leaves
  for (const auto& [src, dst] : std::vector<std::pair<int, int>>{{0, 72}, {0, 160}, {71, 287}}) {
    const std::vector<LinkKind> k = kinds(g, g.route(src, dst));
    EXPECT_EQ(std::count(k.begin(), k.end(), LinkKind::Nvlink), 0) << src << " -> " << dst;
    EXPECT_EQ(std::count(k.begin(), k.end(), LinkKind::NicToFabric), 2) << src << " -> " << dst;
  }
  const std::vector<LinkKind> far = kinds(g, g.route(0, 160)); // tray 0 -> tray 40: leaf, spine, leaf
  EXPECT_EQ(std::count(far.begin(), far.end(), LinkKind::Fabric), 2);
  // A cluster file's domain of 2 nodes: trays 0-1 and 2-3 are two domains (not rail-optimized, 2 NICs per node).
  const ClusterGraph tiny(load_cluster(data_dir + "tiny-nvl8.yaml", 0, {}));
  EXPECT_EQ(kinds(tiny, tiny.route(1, 6)), (std::vector<LinkKind>{LinkKind::Nvlink, LinkKind::Nvlink}));
  const std::vector<LinkKind> across = kinds(tiny, tiny.route(1, 9));
  EXPECT_EQ(std::count(across.begin(), across.end(), LinkKind::NicToFabric), 2);
}

TEST(NvlinkDomain, WithoutTheFieldTheDomainIsTheNode)
{
  const ClusterSpec s = load_cluster("dgx-h100", 2, {});
  EXPECT_EQ(s.nvlink.domain_gpus, 0);
  EXPECT_EQ(s.domain_gpus(), 8);
  EXPECT_FALSE(s.same_nvlink_domain(7, 8));
  const ClusterGraph g(s);
  EXPECT_EQ(g.links()[static_cast<size_t>(g.route(0, 1)[0])].name, "n0.gpu0->n0.nvswitch");
  const std::vector<LinkKind> k = kinds(g, g.route(0, 8));
  EXPECT_EQ(std::count(k.begin(), k.end(), LinkKind::NicToFabric), 2);
}

TEST(NvlinkDomain, DomainNotAWholeNumberOfNodesIsAnError)
{
  EXPECT_EQ(error_of(data_dir + "bad-domain.yaml", {}),
            data_dir + "bad-domain.yaml:16:18: node.nvlink.domain_gpus: 6 GPUs are not a whole number of 4-GPU nodes "
                       "(expected a multiple of node.gpus)");
  EXPECT_EQ(error_of("gb200-nvl72", {"node.nvlink.domain_gpus=70"}),
            "--set node.nvlink.domain_gpus: 70 GPUs are not a whole number of 4-GPU nodes (expected a multiple of "
            "node.gpus)");
  EXPECT_EQ(error_of("gb200-nvl72", {"node.nvlink.domain_gpus=2"}),
            "--set node.nvlink.domain_gpus: 2 GPUs are not a whole number of 4-GPU nodes (expected a multiple of "
            "node.gpus)");
  const std::string zero = error_of("gb200-nvl72", {"node.nvlink.domain_gpus=0"});
  EXPECT_NE(zero.find("node.nvlink.domain_gpus: expected a positive integer"), std::string::npos) << zero;
  // Fewer GPUs than one domain (a partly filled rack) is a valid cluster.
  EXPECT_EQ(load_cluster("gb200-nvl72", 2, {}).nvlink_domains(), 1);
}

} // namespace
} // namespace gputwin::topo
