// Summary counts of the cluster graph, each computed by hand in the comment above it (topologies/README.md gives
// the construction rules). dgx-a100: 8 GPUs, 6 NVSwitch chips, 4 PCIe switches and 8 HDR NICs (25 GB/s) per
// node; radix-40 leaves with d = 20 ports down and u = 20 up; a node has 8 NVLink + 8 GPU-PCIe + 8 NIC-PCIe links,
// plus 8 NIC-leaf links when there is a fabric.
#include "gputwin/common/input_error.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <gtest/gtest.h>

namespace gputwin::topo {
namespace {

const std::string tiny = GPUTWIN_TEST_DATA_DIR "/clusters/tiny.yaml";

TopologySummary summary_of(const std::string& cluster, int nodes, const std::vector<std::string>& sets = {})
{
  return ClusterGraph(load_cluster(cluster, nodes, sets)).summary();
}

TEST(TopologySummary, DgxA100OneNodeHasNoFabric)
{
  // 24 links: 8 NVLink + 8 GPU-PCIe + 8 NIC-PCIe. Injection 8 x 25 / 8 = 25 GB/s; no cut, no bisection.
  const TopologySummary s = summary_of("dgx-a100", 1);
  EXPECT_EQ(s.nodes, 1);
  EXPECT_EQ(s.gpus, 8);
  EXPECT_EQ(s.nvswitch_chips, 6);
  EXPECT_EQ(s.pcie_switches, 4);
  EXPECT_EQ(s.nics, 8);
  EXPECT_EQ(s.fabric_switches_per_level, std::vector<int>{});
  EXPECT_EQ(s.fabric_switches, 0);
  EXPECT_EQ(s.physical_links, 24);
  EXPECT_DOUBLE_EQ(s.nvlink_bytes_per_s_per_gpu, 300e9);
  EXPECT_DOUBLE_EQ(s.injection_bytes_per_s_per_gpu, 25e9);
  EXPECT_DOUBLE_EQ(s.bisection_bytes_per_s, 0);
}

TEST(TopologySummary, DgxA100TwoNodes)
{
  // Leaves: 8 rails x ceil(2/20) = 8 > 1, <= 40: 2 levels, u = 20 spines; 28 switches.
  // Links: 2 x 32 = 64 + 8 x 20 leaf-spine = 160 -> 224. Bisection: min(1 x 8 x 25, 8 x 20 x 25 / 2) = 200 GB/s.
  const TopologySummary s = summary_of("dgx-a100", 2);
  EXPECT_EQ(s.gpus, 16);
  EXPECT_EQ(s.nvswitch_chips, 12);
  EXPECT_EQ(s.pcie_switches, 8);
  EXPECT_EQ(s.nics, 16);
  EXPECT_EQ(s.fabric_switches_per_level, (std::vector<int>{8, 20}));
  EXPECT_EQ(s.fabric_switches, 28);
  EXPECT_EQ(s.physical_links, 224);
  EXPECT_DOUBLE_EQ(s.injection_bytes_per_s_per_gpu, 25e9);
  EXPECT_DOUBLE_EQ(s.bisection_bytes_per_s, 200e9);
}

TEST(TopologySummary, DgxA100SixtyFourNodes)
{
  // 512 GPUs, 384 NVSwitch chips, 256 PCIe switches, 512 NICs. Leaves: 8 rails x ceil(64/20) = 4 -> 32 <= 40:
  // 2 levels, 20 spines, 52 switches. Links: 64 x 32 = 2048 + 32 x 20 = 640 -> 2688.
  // Bisection: min(32 x 8 x 25 = 6400, 32 x 20 x 25 / 2 = 8000) = 6400 GB/s.
  const TopologySummary s = summary_of("dgx-a100", 64);
  EXPECT_EQ(s.gpus, 512);
  EXPECT_EQ(s.nvswitch_chips, 384);
  EXPECT_EQ(s.pcie_switches, 256);
  EXPECT_EQ(s.nics, 512);
  EXPECT_EQ(s.fabric_switches_per_level, (std::vector<int>{32, 20}));
  EXPECT_EQ(s.fabric_switches, 52);
  EXPECT_EQ(s.physical_links, 2688);
  EXPECT_DOUBLE_EQ(s.nvlink_bytes_per_s_per_gpu, 300e9);
  EXPECT_DOUBLE_EQ(s.injection_bytes_per_s_per_gpu, 25e9);
  EXPECT_DOUBLE_EQ(s.bisection_bytes_per_s, 6400e9);
}

TEST(TopologySummary, DgxA100ThreeLevels)
{
  // 128 nodes: leaves 8 x ceil(128/20) = 8 x 7 = 56 > 40: 3 levels. Pods of 20 leaves: ceil(56/20) = 3 pods,
  // 3 x 20 = 60 aggregation switches, 20 groups x 20 = 400 cores; 516 switches.
  // Links: 128 x 32 = 4096 + 56 x 20 leaf-agg = 1120 + 60 x 20 agg-core = 1200 -> 6416.
  // Bisection: min(64 x 8 x 25 = 12800, 56 x 20 x 25 / 2 = 14000, 60 x 20 x 25 / 2 = 15000) = 12800 GB/s.
  const TopologySummary s = summary_of("dgx-a100", 128);
  EXPECT_EQ(s.gpus, 1024);
  EXPECT_EQ(s.nics, 1024);
  EXPECT_EQ(s.fabric_switches_per_level, (std::vector<int>{56, 60, 400}));
  EXPECT_EQ(s.fabric_switches, 516);
  EXPECT_EQ(s.physical_links, 6416);
  EXPECT_DOUBLE_EQ(s.bisection_bytes_per_s, 12800e9);
}

TEST(TopologySummary, DgxA100NotRailOptimized)
{
  // 16 nodes: 128 NICs in node-major order, ceil(128/20) = 7 leaves <= 40: 2 levels, 20 spines, 27 switches.
  // Links: 16 x 32 = 512 + 7 x 20 = 140 -> 652. Bisection: min(8 x 8 x 25 = 1600, 7 x 20 x 25 / 2 = 1750).
  const TopologySummary s = summary_of("dgx-a100", 16, {"fabric.rail_optimized=false"});
  EXPECT_EQ(s.fabric_switches_per_level, (std::vector<int>{7, 20}));
  EXPECT_EQ(s.fabric_switches, 27);
  EXPECT_EQ(s.physical_links, 652);
  EXPECT_DOUBLE_EQ(s.bisection_bytes_per_s, 1600e9);
}

TEST(TopologySummary, DgxA100Oversubscribed)
{
  // Oversubscription 3: d = floor(40 x 3 / 4) = 30 down, u = 10 up. 64 nodes: 8 x ceil(64/30) = 24 leaves,
  // 2 levels, 10 spines, 34 switches. Links: 2048 + 24 x 10 = 2288.
  // Bisection: min(32 x 8 x 25 = 6400, 24 x 10 x 25 / 2 = 3000) = 3000 GB/s: the uplinks limit it.
  const TopologySummary s = summary_of("dgx-a100", 64, {"fabric.oversubscription=3"});
  EXPECT_EQ(s.fabric_switches_per_level, (std::vector<int>{24, 10}));
  EXPECT_EQ(s.fabric_switches, 34);
  EXPECT_EQ(s.physical_links, 2288);
  EXPECT_DOUBLE_EQ(s.bisection_bytes_per_s, 3000e9);
}

TEST(TopologySummary, DgxH100TwoNodes)
{
  // NDR, radix 64: d = u = 32. Leaves 8 x ceil(2/32) = 8: 2 levels, 32 spines, 40 switches.
  // Links: 2 x 32 + 8 x 32 = 320. NVLink 450 GB/s; injection 8 x 50 / 8 = 50 GB/s;
  // bisection min(1 x 8 x 50 = 400, 8 x 32 x 50 / 2 = 6400) = 400 GB/s.
  const TopologySummary s = summary_of("dgx-h100", 2);
  EXPECT_EQ(s.nvswitch_chips, 8);
  EXPECT_EQ(s.fabric_switches_per_level, (std::vector<int>{8, 32}));
  EXPECT_EQ(s.physical_links, 320);
  EXPECT_DOUBLE_EQ(s.nvlink_bytes_per_s_per_gpu, 450e9);
  EXPECT_DOUBLE_EQ(s.injection_bytes_per_s_per_gpu, 50e9);
  EXPECT_DOUBLE_EQ(s.bisection_bytes_per_s, 400e9);
}

TEST(TopologySummary, TinyThreeLevelsNotRailOptimized)
{
  // tiny: 4 GPUs, 1 NVSwitch chip, 2 PCIe switches, 2 NICs (10 GB/s) per node; radix 4: d = u = 2.
  // 8 nodes: 16 NICs / 2 = 8 leaves > 4: 3 levels; pods of 2 leaves: 4 pods x 2 = 8 aggregation switches,
  // 2 groups x 2 = 4 cores; 20 switches. Links: 8 x (4 + 4 + 2 + 2) = 96 + 8 x 2 + 8 x 2 = 128.
  // Injection 2 x 10 / 4 = 5 GB/s. Bisection: min(4 x 2 x 10, 8 x 2 x 10 / 2, 8 x 2 x 10 / 2) = 80 GB/s.
  const TopologySummary s = summary_of(tiny, 8);
  EXPECT_EQ(s.gpus, 32);
  EXPECT_EQ(s.nvswitch_chips, 8);
  EXPECT_EQ(s.pcie_switches, 16);
  EXPECT_EQ(s.nics, 16);
  EXPECT_EQ(s.fabric_switches_per_level, (std::vector<int>{8, 8, 4}));
  EXPECT_EQ(s.fabric_switches, 20);
  EXPECT_EQ(s.physical_links, 128);
  EXPECT_DOUBLE_EQ(s.injection_bytes_per_s_per_gpu, 5e9);
  EXPECT_DOUBLE_EQ(s.bisection_bytes_per_s, 80e9);
}

TEST(TopologySummary, LargestDgxA100BuildsAndTheNextNodeDoesNot)
{
  // 2000 nodes: 8 x 100 = 800 leaves = 40 pods of 20 (= radix): 800 aggregation switches, 400 cores.
  const ClusterGraph graph(load_cluster("dgx-a100", 2000, {}));
  EXPECT_EQ(graph.summary().fabric_switches_per_level, (std::vector<int>{800, 800, 400}));
  ClusterSpec spec = graph.spec();
  spec.nodes = 2001;
  try {
    ClusterGraph too_big(spec);
    ADD_FAILURE() << "2001 nodes built";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "cluster 'dgx-a100': fabric.levels: 2001 nodes do not fit 3 levels of radix-40 "
                                     "switches (expected --nodes at most 2000, or a larger fabric.switch_radix)");
  }
}

} // namespace
} // namespace gputwin::topo
