// The Blackwell Ultra built-ins: dgx-b300 (8 B300 per node, NVLink 5, 8 ConnectX-8 at 800 Gb/s) and gb300-nvl72
// (18 trays of 4 GB300 GPUs per 72-GPU NVLink domain, one ConnectX-8 per GPU), with the per-GPU figures their files
// derive from NVIDIA's published HGX B300 and GB300 NVL72 specifications (sources in the files).
#include "gputwin/topologies/cluster_graph.hpp"

#include <gtest/gtest.h>

namespace gputwin::topo {
namespace {

TEST(BlackwellUltraClusters, DgxB300IsEightB300sWithConnectX8)
{
  const ClusterSpec s = load_cluster("dgx-b300", 0, {});
  EXPECT_EQ(s.gpu.kind, "b300");
  EXPECT_EQ(s.gpu.generation, GpuGeneration::Blackwell);
  EXPECT_DOUBLE_EQ(s.gpu.peak_bf16_flops, 2250e12); // HGX B300: 36 PFLOPS sparse BF16 / 8 / 2
  EXPECT_DOUBLE_EQ(s.gpu.peak_fp8_flops, 4500e12);  // 72 PFLOPS sparse FP8 / 8 / 2
  EXPECT_EQ(s.gpu.hbm_bytes, int64_t{288'000'000'000});
  EXPECT_DOUBLE_EQ(s.gpu.hbm_bytes_per_s, 8e12);
  EXPECT_EQ(s.gpus_per_node, 8);
  EXPECT_EQ(s.domain_gpus(), 8); // the node
  EXPECT_DOUBLE_EQ(s.nvlink.bytes_per_s, 900e9);
  EXPECT_EQ(s.nic.count, 8);
  EXPECT_DOUBLE_EQ(s.nic.bytes_per_s, 100e9); // 800 Gb/s
  EXPECT_GE(s.pcie.bytes_per_s, s.nic.bytes_per_s) << "PCIe Gen6 carries a full 800G NIC";
}

TEST(BlackwellUltraClusters, Gb300Nvl72IsEighteenTraysOfFourGpusInOneDomain)
{
  const ClusterSpec s = load_cluster("gb300-nvl72", 0, {});
  EXPECT_EQ(s.gpu.kind, "gb300");
  EXPECT_DOUBLE_EQ(s.gpu.peak_bf16_flops, 2500e12); // GB300 NVL72: 360 PFLOPS sparse BF16 / 72 / 2
  EXPECT_DOUBLE_EQ(s.gpu.peak_fp8_flops, 5000e12);  // 720 PFLOPS sparse FP8 / 72 / 2
  EXPECT_EQ(s.gpu.hbm_bytes, int64_t{288'000'000'000});
  EXPECT_DOUBLE_EQ(s.gpu.hbm_bytes_per_s, 8e12); // 576 TB/s / 72
  EXPECT_EQ(s.nodes, 18);
  EXPECT_EQ(s.gpus_per_node, 4);
  EXPECT_EQ(s.domain_gpus(), 72);
  EXPECT_EQ(s.nic.count, 4);
  EXPECT_DOUBLE_EQ(s.nic.bytes_per_s, 100e9); // ConnectX-8, 800 Gb/s

  const TopologySummary rack = ClusterGraph(s).summary();
  EXPECT_EQ(rack.gpus, 72);
  EXPECT_EQ(rack.nvlink_domains, 1);
  EXPECT_EQ(rack.nics, 72);
  EXPECT_DOUBLE_EQ(rack.injection_bytes_per_s_per_gpu, 100e9);
  const TopologySummary two_racks = ClusterGraph(load_cluster("gb300-nvl72", 36, {})).summary();
  EXPECT_EQ(two_racks.nvlink_domains, 2);
  EXPECT_TRUE(s.same_nvlink_domain(0, 71));
  EXPECT_FALSE(s.same_nvlink_domain(71, 72));
}

} // namespace
} // namespace gputwin::topo
