// NCCL's model on an NVLink domain of several nodes (GB200 NVL72: 18 trays of 4 GPUs per rack): a communicator
// inside one domain is NCCL's one node, on NVLink only, whatever trays it spans (multi-node NVLink); across racks
// its rings leave each domain through the domain's NICs. Both are held to the same GPUs in a cluster whose node is
// the whole 72-GPU rack (the domain written as one node), which the collective model planned before domains existed.
#include "gputwin/sim/collective_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace gputwin::sim {
namespace {

std::vector<int> gpus_from(int first, int count)
{
  std::vector<int> g(static_cast<size_t>(count));
  std::iota(g.begin(), g.end(), first);
  return g;
}

// `racks` GB200 NVL72 racks of 18 trays each.
topo::ClusterSpec nvl72_trays(int racks)
{
  return topo::load_cluster("gb200-nvl72", 18 * racks, {});
}

// The same racks with the rack written as one node of 72 GPUs and 72 NICs (the NVLink domain is the node).
topo::ClusterSpec nvl72_rack_nodes(int racks)
{
  topo::ClusterSpec c = nvl72_trays(racks);
  c.nodes = racks;
  c.gpus_per_node = 72;
  c.nvlink.domain_gpus = 0;
  c.pcie.switches_per_node = 18;
  c.nic.count = 72;
  c.nic.gpus.clear();
  for (int n = 0; n < 72; ++n)
    c.nic.gpus.push_back({n});
  return c;
}

void expect_same_plan(const CollectivePlan& a, const CollectivePlan& b)
{
  EXPECT_EQ(a.nodes, b.nodes);
  EXPECT_EQ(a.channels, b.channels);
  EXPECT_EQ(a.nccl_channels, b.nccl_channels);
  EXPECT_EQ(a.choice.algorithm, b.choice.algorithm);
  EXPECT_EQ(a.choice.protocol, b.choice.protocol);
  EXPECT_DOUBLE_EQ(a.choice.latency_s, b.choice.latency_s);
  EXPECT_DOUBLE_EQ(a.transfer_s, b.transfer_s);
  ASSERT_EQ(a.flows.size(), b.flows.size());
  for (size_t i = 0; i < a.flows.size(); ++i) {
    EXPECT_EQ(a.flows[i].src_gpu, b.flows[i].src_gpu);
    EXPECT_EQ(a.flows[i].dst_gpu, b.flows[i].dst_gpu);
    EXPECT_DOUBLE_EQ(a.flows[i].bytes, b.flows[i].bytes);
  }
}

TEST(NvlinkDomainCollective, GroupInsideOneDomainIsOneNcclNodeOnNvlink)
{
  const topo::ClusterSpec c = nvl72_trays(2);
  const double nvlink = c.nvlink.bytes_per_s * c.nccl.nvlink_efficiency;
  // A whole rack (18 trays), a TP group of 8 over two trays, an EP group of 16 straddling trays 1-5.
  for (const std::vector<int>& gpus : {gpus_from(0, 72), gpus_from(0, 8), gpus_from(6, 16), gpus_from(72, 72)}) {
    SCOPED_TRACE("GPUs from " + std::to_string(gpus.front()) + ", " + std::to_string(gpus.size()) + " ranks");
    EXPECT_DOUBLE_EQ(ring_bus_bytes_per_s(c, gpus), nvlink);
    const CollectivePlan plan = plan_collective(c, CollectiveOp::AllReduce, gpus, 8.0 * (1 << 30));
    EXPECT_EQ(plan.nodes, 1);
    EXPECT_EQ(plan.channels, 1);
    EXPECT_EQ(plan.choice.algorithm, NcclAlgorithm::Nvls); // NVLink SHARP inside the domain
    for (const Flow& f : plan.flows)
      EXPECT_TRUE(c.same_nvlink_domain(f.src_gpu, f.dst_gpu)) << f.src_gpu << " -> " << f.dst_gpu;
    EXPECT_EQ(plan_collective(c, CollectiveOp::AllToAll, gpus, 1e9).nodes, 1);
  }
  for (const CollectiveOp op : {CollectiveOp::AllReduce, CollectiveOp::AllGather, CollectiveOp::AllToAll})
    for (const double bytes : {1e5, 8e9})
      expect_same_plan(plan_collective(c, op, gpus_from(0, 72), bytes),
                       plan_collective(nvl72_rack_nodes(2), op, gpus_from(0, 72), bytes));
}

TEST(NvlinkDomainCollective, GroupAcrossRacksLeavesEachDomainThroughItsNics)
{
  const topo::ClusterSpec c = nvl72_trays(2);
  const CollectivePlan plan =
      plan_collective(c, CollectiveOp::AllReduce, gpus_from(0, 144), 8e9, {NcclAlgorithm::Ring, NcclProtocol::Simple});
  EXPECT_EQ(plan.nodes, 2);
  EXPECT_EQ(plan.channels, 72); // a ring per NIC of the rack
  const auto crossing = std::count_if(plan.flows.begin(), plan.flows.end(),
                                      [&](const Flow& f) { return !c.same_nvlink_domain(f.src_gpu, f.dst_gpu); });
  EXPECT_EQ(crossing, 2 * 72); // every ring crosses from rack 0 to rack 1 and back once
  for (const CollectiveOp op : {CollectiveOp::AllReduce, CollectiveOp::ReduceScatter, CollectiveOp::AllToAll})
    for (const double bytes : {1e5, 8e9})
      expect_same_plan(plan_collective(c, op, gpus_from(0, 144), bytes),
                       plan_collective(nvl72_rack_nodes(2), op, gpus_from(0, 144), bytes));
  // An EP group of 16 straddling the racks (GPUs 64-79): two NCCL nodes, its rings through rack 0's tray-16 NICs.
  const CollectivePlan straddling = plan_collective(c, CollectiveOp::AllToAll, gpus_from(64, 16), 1e9);
  EXPECT_EQ(straddling.nodes, 2);
  EXPECT_DOUBLE_EQ(ring_bus_bytes_per_s(c, gpus_from(64, 16)), 8 * c.nic.bytes_per_s * c.nccl.net_efficiency);
}

} // namespace
} // namespace gputwin::sim
