// The collectives' decomposition and NCCL's algorithm choice: plain C++, no SimGrid.
#include "dgx_spec.hpp"

#include "gputwin/sim/collective_plan.hpp"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <set>

namespace gputwin::sim {
namespace {

using testing::first_gpus;

TEST(BusBandwidth, NcclTestsFactors)
{
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::AllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::AllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::ReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::AllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::Broadcast, 8), 1.0);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CollectiveOp::SendRecv, 2), 1.0);
}

TEST(RingOrders, EnterThroughTheRailNicAndLeaveFromItsPcieSwitch)
{
  const topo::ClusterSpec c = testing::dgx_like_spec(2, false);
  const auto rings = ring_orders(c, first_gpus(16));
  ASSERT_EQ(rings.size(), 8u); // one channel per NIC rail
  // Rail 0: enter at GPU 0 (NIC 0's), leave from GPU 1 (same PCIe switch as NIC 0), the rest between.
  EXPECT_EQ(rings[0], (std::vector<int>{0, 2, 3, 4, 5, 6, 7, 1, 8, 10, 11, 12, 13, 14, 15, 9}));
  // Rail 5: enter at GPU 5, leave from GPU 4.
  EXPECT_EQ(rings[5], (std::vector<int>{5, 0, 1, 2, 3, 6, 7, 4, 13, 8, 9, 10, 11, 14, 15, 12}));
  for (const auto& ring : rings)
    EXPECT_EQ(std::set<int>(ring.begin(), ring.end()).size(), 16u);
}

TEST(RingOrders, OneGpuPerNodeUsesItsOwnRail)
{
  const topo::ClusterSpec c = testing::dgx_like_spec(4, false);
  const auto rings = ring_orders(c, {3, 11, 19, 27});
  ASSERT_EQ(rings.size(), 1u);
  EXPECT_EQ(rings[0], (std::vector<int>{3, 11, 19, 27}));
  EXPECT_DOUBLE_EQ(ring_bus_bytes_per_s(c, {3, 11, 19, 27}), 25e9 * 0.96);
}

TEST(CollectivePlan, RingAllReduceMovesTwoNMinusOneOverNOfTheBufferPerGpu)
{
  const topo::ClusterSpec c = testing::dgx_like_spec(2, false);
  CollectiveOptions ring_simple{NcclAlgorithm::Ring, NcclProtocol::Simple};
  const double bytes = double(1 << 30);
  const CollectivePlan plan = plan_collective(c, CollectiveOp::AllReduce, first_gpus(16), bytes, ring_simple);
  EXPECT_EQ(plan.channels, 8);
  EXPECT_EQ(plan.flows.size(), 8u * 16u);
  std::map<int, double> sent;
  for (const Flow& f : plan.flows) {
    EXPECT_EQ(f.steps, 30);
    sent[f.src_gpu] += f.bytes;
  }
  for (const auto& [gpu, b] : sent)
    EXPECT_NEAR(b, 2.0 * 15 / 16 * bytes, 1e-3) << gpu;
}

TEST(CollectivePlan, ProtocolsPutMoreBytesOnTheWire)
{
  const topo::ClusterSpec c = testing::dgx_like_spec(1, false);
  const CollectivePlan simple =
      plan_collective(c, CollectiveOp::AllGather, first_gpus(8), 1e6, {NcclAlgorithm::Ring, NcclProtocol::Simple});
  const CollectivePlan ll =
      plan_collective(c, CollectiveOp::AllGather, first_gpus(8), 1e6, {NcclAlgorithm::Ring, NcclProtocol::LL});
  // LL's 16-byte lines carry 8 data bytes; a channel's own LL limit may stretch the flows further (nccl_cost).
  EXPECT_GE(ll.flows[0].bytes / simple.flows[0].bytes, 2.0 - 1e-9);
}

TEST(CollectivePlan, SendRecvAllToAllBroadcastAndTree)
{
  const topo::ClusterSpec c = testing::dgx_like_spec(4, false);
  const CollectivePlan p2p = plan_collective(c, CollectiveOp::SendRecv, {0, 8}, 1e9);
  ASSERT_EQ(p2p.flows.size(), 2u);
  EXPECT_EQ(p2p.flows[0].src_gpu, 0);
  EXPECT_EQ(p2p.flows[0].dst_gpu, 8);
  EXPECT_DOUBLE_EQ(p2p.flows[0].bytes, 1e9);

  const CollectivePlan a2a = plan_collective(c, CollectiveOp::AllToAll, first_gpus(8), 8e6);
  EXPECT_EQ(a2a.flows.size(), 56u);
  EXPECT_DOUBLE_EQ(a2a.flows[0].bytes, 1e6);

  const CollectivePlan bcast =
      plan_collective(c, CollectiveOp::Broadcast, first_gpus(8), 8e6, {NcclAlgorithm::Ring, NcclProtocol::Simple});
  EXPECT_EQ(bcast.flows.size(), 7u); // one ring inside a node: a chain of 7 hops
  for (const Flow& f : bcast.flows)
    EXPECT_NE(f.dst_gpu, 0) << "nothing flows back into the root";

  // Tree all-reduce over 4 nodes: per rail 3 inter-node edges in each of the two trees and 7 chain edges per
  // node, both directions.
  const CollectivePlan tree =
      plan_collective(c, CollectiveOp::AllReduce, first_gpus(32), 1e6, {NcclAlgorithm::Tree, NcclProtocol::Simple});
  EXPECT_EQ(tree.choice.algorithm, NcclAlgorithm::Tree);
  EXPECT_EQ(tree.flows.size(), 8u * (2 * 3 + 4 * 7) * 2);
}

TEST(DoubleBinaryTree, TwoValidTreesWithFewNodesInteriorInBoth)
{
  for (int n = 2; n <= 64; ++n) {
    const auto parents = double_binary_tree_parents(n);
    std::vector<int> interior(static_cast<size_t>(n), 0);
    for (const auto& tree : parents) {
      int roots = 0;
      std::vector<int> children(static_cast<size_t>(n), 0);
      for (int i = 0; i < n; ++i) {
        if (tree[static_cast<size_t>(i)] < 0) {
          ++roots;
          continue;
        }
        ++children[static_cast<size_t>(tree[static_cast<size_t>(i)])];
        // Walking up reaches the root in at most log2(n) + 1 steps: no cycles.
        int j = i, hops = 0;
        while (tree[static_cast<size_t>(j)] >= 0 && hops <= n)
          j = tree[static_cast<size_t>(j)], ++hops;
        EXPECT_LE(hops, 7) << "n=" << n;
      }
      EXPECT_EQ(roots, 1);
      for (int i = 0; i < n; ++i) {
        EXPECT_LE(children[static_cast<size_t>(i)], 2);
        interior[static_cast<size_t>(i)] += children[static_cast<size_t>(i)] > 0;
      }
    }
    int both = 0;
    for (const int k : interior)
      both += k == 2;
    EXPECT_LE(both, 2) << "n=" << n;
  }
}

TEST(NcclTuner, PicksByNcclsCostModel)
{
  TunerInput in;
  in.op = CollectiveOp::AllReduce;
  in.ranks = 8;
  in.nodes = 1;
  in.ring_bus_bytes_per_s = 231e9;
  in.ampere = true;
  in.bytes = 1024;
  EXPECT_EQ(choose_nccl_algorithm(in).protocol, NcclProtocol::LL); // latency-bound
  in.bytes = 8.0 * (1 << 30);
  const NcclChoice big = choose_nccl_algorithm(in);
  EXPECT_EQ(big.algorithm, NcclAlgorithm::Ring);
  EXPECT_EQ(big.protocol, NcclProtocol::Simple);
  EXPECT_EQ(big.steps, 14);
  // Ring/Simple on NVLink: base 8.4 us + 14 steps x 3.4 us.
  EXPECT_NEAR(big.latency_s, (8.4 + 14 * 3.4) * 1e-6, 1e-12);

  in.ranks = 1024;
  in.nodes = 128;
  in.ring_bus_bytes_per_s = 192e9;
  in.bytes = 1 << 20;
  EXPECT_EQ(choose_nccl_algorithm(in).algorithm, NcclAlgorithm::Tree); // ring latency grows with 2(n-1) steps
  in.bytes = 8.0 * (1 << 30);
  EXPECT_EQ(choose_nccl_algorithm(in).algorithm, NcclAlgorithm::Ring);
  in.force_algorithm = NcclAlgorithm::Tree;
  EXPECT_EQ(choose_nccl_algorithm(in).algorithm, NcclAlgorithm::Tree);
  in.op = CollectiveOp::AllGather;
  EXPECT_THROW(choose_nccl_algorithm(in), std::invalid_argument); // no tree all-gather
}

TEST(CollectivePlan, RejectsBadRanks)
{
  const topo::ClusterSpec c = testing::dgx_like_spec(1, false);
  EXPECT_THROW(plan_collective(c, CollectiveOp::AllReduce, {}, 1e6), std::invalid_argument);
  EXPECT_THROW(plan_collective(c, CollectiveOp::AllReduce, {0, 0}, 1e6), std::invalid_argument);
  EXPECT_THROW(plan_collective(c, CollectiveOp::AllReduce, {0, 8}, 1e6), std::invalid_argument);
}

} // namespace
} // namespace gputwin::sim
