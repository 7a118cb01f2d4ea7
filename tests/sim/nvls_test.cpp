// NVLink SHARP (NVLS) in NCCL's model: where NCCL 2.30 uses it (all-reduce on Hopper/Blackwell NVSwitch domains
// with at least two of the communicator's GPUs in each, NVLS tree across domains), the bandwidth its tuner gives it,
// and the bytes its flows put on each GPU's NVLink, derived here from the formulas in tuning.cc and search.cc.
#include "dgx_spec.hpp"

#include "gputwin/sim/collective_plan.hpp"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <utility>

namespace gputwin::sim {
namespace {

std::vector<int> gpus_from(int first, int count)
{
  std::vector<int> g = testing::first_gpus(count);
  for (int& gpu : g)
    gpu += first;
  return g;
}

// Bytes of `plan`'s flows inside one node of `gpus_per_node` GPUs and between nodes.
std::pair<double, double> intra_and_inter_node_bytes(const CollectivePlan& plan, int gpus_per_node)
{
  double intra = 0, inter = 0;
  for (const Flow& f : plan.flows)
    (f.src_gpu / gpus_per_node == f.dst_gpu / gpus_per_node ? intra : inter) += f.bytes;
  return {intra, inter};
}

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

TEST(Nvls, TunerBandwidthFollowsNcclsFormula)
{
  // tuning.cc: busBw = nChannels x bwIntra x nvlsEfficiency x (nChannels - 1) / nChannels x 2, where search.cc
  // gives each of the n heads' channels the GPU's NVLink over n + 1.
  const double link = 370e9;
  EXPECT_NEAR(nvls_bus_bytes_per_s(link, 0.85, 8), 2 * 0.85 * link * 7 / 9, 1.0);
  EXPECT_NEAR(nvls_bus_bytes_per_s(link, 0.74, 32), 2 * 0.74 * link * 31 / 33, 1.0);
  EXPECT_EQ(nvls_bus_bytes_per_s(link, 0.85, 1), 0.0);
  EXPECT_EQ(nvls_heads(72), 32); // NCCL_MAX_NVLS_ARITY
  EXPECT_EQ(nvls_heads(4), 4);
  EXPECT_EQ(nccl_nvls_efficiency(GpuGeneration::Hopper), 0.85);
  EXPECT_EQ(nccl_nvls_efficiency(GpuGeneration::Blackwell), 0.74);
  EXPECT_EQ(nccl_nvls_efficiency(GpuGeneration::Ampere), 0.0);
}

TEST(Nvls, LargeAllReduceOnOneHopperNodeTakesNvlsAndLoadsEveryNvlinkWithItsShare)
{
  const topo::ClusterSpec c = topo::load_cluster("dgx-h100", 1, {});
  const double bytes = 1 * GiB;
  const CollectivePlan plan = plan_collective(c, CollectiveOp::AllReduce, gpus_from(0, 8), bytes);
  ASSERT_EQ(plan.choice.algorithm, NcclAlgorithm::Nvls);
  EXPECT_EQ(plan.choice.protocol, NcclProtocol::Simple);
  // Each GPU sends its buffer into the switches' reduction and its reduced eighth into their multicast, and
  // receives as much: (n + 1) / n of the buffer each way, at NVLS's efficiency.
  const double expected = bytes * 9.0 / 8.0 / 0.85;
  std::map<int, double> sent, received;
  for (const Flow& f : plan.flows) {
    sent[f.src_gpu] += f.bytes;
    received[f.dst_gpu] += f.bytes;
  }
  ASSERT_EQ(sent.size(), 8u);
  for (int g = 0; g < 8; ++g) {
    EXPECT_NEAR(sent[g], expected, 1e-6 * expected) << "GPU " << g;
    EXPECT_NEAR(received[g], expected, 1e-6 * expected) << "GPU " << g;
  }
  const double link = c.nvlink.bytes_per_s * c.nccl.nvlink_efficiency;
  EXPECT_NEAR(plan.transfer_s, expected / link, 1e-9 * plan.transfer_s);
}

TEST(Nvls, TurnedOffOrOlderGpusOrSmallMessagesKeepRingAndTree)
{
  const double bytes = 1 * GiB;
  const topo::ClusterSpec off = topo::load_cluster("dgx-h100", 1, {"nccl.nvls=false"});
  EXPECT_EQ(plan_collective(off, CollectiveOp::AllReduce, gpus_from(0, 8), bytes).choice.algorithm,
            NcclAlgorithm::Ring);
  const topo::ClusterSpec a100 = topo::load_cluster("dgx-a100", 1, {});
  EXPECT_EQ(plan_collective(a100, CollectiveOp::AllReduce, gpus_from(0, 8), bytes).choice.algorithm,
            NcclAlgorithm::Ring);
  const topo::ClusterSpec h100 = topo::load_cluster("dgx-h100", 2, {});
  // NVLS's 25 us latency loses to the ring's LL at small sizes.
  EXPECT_NE(plan_collective(h100, CollectiveOp::AllReduce, gpus_from(0, 8), 64e3).choice.algorithm,
            NcclAlgorithm::Nvls);
  // All-gather and reduce-scatter stay on the ring (NVLS gives them no bandwidth on one domain in NCCL's model).
  EXPECT_EQ(plan_collective(h100, CollectiveOp::AllGather, gpus_from(0, 8), bytes).choice.algorithm,
            NcclAlgorithm::Ring);
  EXPECT_EQ(plan_collective(h100, CollectiveOp::ReduceScatter, gpus_from(0, 8), bytes).choice.algorithm,
            NcclAlgorithm::Ring);
  // One GPU per node: NCCL has no NVLS without two local GPUs.
  const CollectivePlan one_per_node = plan_collective(h100, CollectiveOp::AllReduce, {0, 8}, bytes);
  EXPECT_NE(one_per_node.choice.algorithm, NcclAlgorithm::NvlsTree);
  EXPECT_NE(one_per_node.choice.algorithm, NcclAlgorithm::Nvls);
  // Forcing NVLS where it is not: an error that says why.
  CollectiveOptions force;
  force.algorithm = NcclAlgorithm::Nvls;
  EXPECT_THROW(plan_collective(a100, CollectiveOp::AllReduce, gpus_from(0, 8), bytes, force), std::invalid_argument);
}

TEST(Nvls, AcrossNodesNvlsTreeCarriesEachRailsShareOverTheNics)
{
  const topo::ClusterSpec c = topo::load_cluster("dgx-h100", 4, {});
  const double bytes = 4 * GiB;
  const CollectivePlan plan = plan_collective(c, CollectiveOp::AllReduce, gpus_from(0, 32), bytes);
  ASSERT_EQ(plan.choice.algorithm, NcclAlgorithm::NvlsTree);
  // Inter-node flows: per rail two trees, each edge carrying half the rail's share both ways; inside each node
  // the NVLS bytes on every GPU's NVLink.
  const auto [intra, inter] = intra_and_inter_node_bytes(plan, 8);
  const double share = bytes / 8; // 8 rails
  // Double binary tree over 4 nodes: 3 edges per tree, 2 trees, both directions, half a share each.
  EXPECT_NEAR(inter, 8 * 2 * 3 * 2 * share / 2, 1e-6 * inter);
  EXPECT_NEAR(intra, 4 * 8 * bytes * 9.0 / 8.0 / 0.85, 1e-6 * intra);
  // Turned off, the same all-reduce is a ring or tree again.
  const topo::ClusterSpec off = topo::load_cluster("dgx-h100", 4, {"nccl.nvls=false"});
  const NcclAlgorithm ring_or_tree = plan_collective(off, CollectiveOp::AllReduce, gpus_from(0, 32), bytes).choice.algorithm;
  EXPECT_TRUE(ring_or_tree == NcclAlgorithm::Ring || ring_or_tree == NcclAlgorithm::Tree);
}

TEST(Nvls, Nvl72RackUsesThirtyTwoHeadsAcrossItsTrays)
{
  const topo::ClusterSpec c = topo::load_cluster("gb200-nvl72", 18, {});
  const double bytes = 8 * GiB;
  const CollectivePlan plan = plan_collective(c, CollectiveOp::AllReduce, gpus_from(0, 72), bytes);
  ASSERT_EQ(plan.choice.algorithm, NcclAlgorithm::Nvls);
  EXPECT_EQ(plan.nodes, 1); // one NVLink domain: NCCL's one node
  // Bytes per NVLink: the time of NCCL's bandwidth (32 heads) at the NVLink's efficiency.
  const double link = c.nvlink.bytes_per_s * c.nccl.nvlink_efficiency;
  const double algbw = nvls_bus_bytes_per_s(link, 0.74, 32) * 72 / (2.0 * 71);
  EXPECT_NEAR(plan.transfer_s, bytes / algbw, 1e-9 * plan.transfer_s);
  EXPECT_EQ(plan.flows.size(), 72u); // one cycle over the rack's GPUs, across its trays
}

// CollNet (SHARP in the InfiniBand switches) is off unless the cluster turns it on, as NCCL_COLLNET_ENABLE is.
TEST(CollNet, OffByDefaultAndAnErrorWhenForced)
{
  const topo::ClusterSpec c = topo::load_cluster("dgx-a100", 4, {});
  const double bytes = 4 * GiB;
  const NcclAlgorithm chosen = plan_collective(c, CollectiveOp::AllReduce, gpus_from(0, 32), bytes).choice.algorithm;
  EXPECT_TRUE(chosen == NcclAlgorithm::Ring || chosen == NcclAlgorithm::Tree);
  CollectiveOptions force;
  force.algorithm = NcclAlgorithm::CollNetDirect;
  EXPECT_THROW(plan_collective(c, CollectiveOp::AllReduce, gpus_from(0, 32), bytes, force), std::invalid_argument);
}

// With SHARP each rail's NIC sends its share once and receives the reduced share once (a ring sends 2 (n - 1) / n
// of it), and inside the node every GPU scatters to the heads and gathers back.
TEST(CollNet, EachNicCarriesItsShareOnceAndTheNodesScatterAndGather)
{
  const topo::ClusterSpec c = topo::load_cluster("dgx-a100", 4, {"nccl.collnet=true"});
  const double bytes = 4 * GiB;
  const CollectivePlan plan = plan_collective(c, CollectiveOp::AllReduce, gpus_from(0, 32), bytes);
  ASSERT_EQ(plan.choice.algorithm, NcclAlgorithm::CollNetDirect);
  const auto [intra, inter] = intra_and_inter_node_bytes(plan, 8);
  EXPECT_NEAR(inter, 4 * bytes, 1e-6 * inter);               // 4 nodes x 8 rails x share each way (a cycle)
  EXPECT_NEAR(intra, 4 * 8 * 2 * 7.0 / 8 * bytes, 1e-6 * intra); // every GPU's 2 (p - 1) / p of the buffer
  // The busiest link: the NVLink (231 GB/s at 1.75 x the buffer) rather than the NICs (8 x 24 GB/s, the buffer).
  const double nvlink = c.nvlink.bytes_per_s * c.nccl.nvlink_efficiency;
  EXPECT_NEAR(plan.transfer_s, 2 * 7.0 / 8 * bytes / nvlink, 1e-9 * plan.transfer_s);
}

TEST(CollNet, OneGpuPerNodeTakesTheChainAndHopperTakesNvlsAcrossNodes)
{
  const topo::ClusterSpec h100 = topo::load_cluster("dgx-h100", 4, {"nccl.collnet=true"});
  const double bytes = 4 * GiB;
  const CollectivePlan single = plan_collective(h100, CollectiveOp::AllReduce, {0, 8, 16, 24}, bytes);
  EXPECT_EQ(single.choice.algorithm, NcclAlgorithm::CollNetChain);
  const double nic = h100.nic.bytes_per_s * h100.nccl.net_efficiency;
  EXPECT_NEAR(single.transfer_s, bytes / nic, 1e-9 * single.transfer_s); // the one NIC carries the buffer once
  const CollectivePlan full = plan_collective(h100, CollectiveOp::AllReduce, gpus_from(0, 32), bytes);
  EXPECT_EQ(full.choice.algorithm, NcclAlgorithm::Nvls); // NVLS inside, SHARP across
}

} // namespace
} // namespace gputwin::sim
