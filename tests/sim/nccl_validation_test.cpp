// The built-in clusters' collectives against measured NCCL bus bandwidths (bound: 10%), and the shape of the
// bandwidth curve. One SimGrid platform per test (ctest runs each test in its own process).
#include "data/nccl_measurements.hpp"
#include "dgx_spec.hpp"

#include "gputwin/sim/collective_executor.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

namespace gputwin::sim {
namespace {

using testing::first_gpus;

struct Measured {
  double time_s, busbw_gbps;
};

// Simulates `op` of each size in `sizes` (one after another) on `ranks` GPUs of `cluster`.
std::vector<Measured> simulate(const char* cluster, int nodes, CollectiveOp op, const std::vector<int>& gpus,
                               const std::vector<double>& sizes)
{
  const topo::ClusterGraph graph(topo::load_cluster(cluster, nodes, {}));
  std::vector<CollectivePlan> plans;
  for (const double bytes : sizes)
    plans.push_back(plan_collective(graph.spec(), op, gpus, bytes));
  std::vector<const CollectivePlan*> stream;
  for (const auto& p : plans)
    stream.push_back(&p);
  const SimgridPlatform platform(graph, flow_pairs(stream));
  const auto timings = run_collective_streams(platform, graph, {stream});
  std::vector<Measured> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double t = timings[0][i].duration_s();
    out.push_back({t, sizes[i] / t / 1e9 * bus_bandwidth_factor(op, static_cast<int>(gpus.size()))});
  }
  return out;
}

constexpr double GiB = 1024.0 * 1024.0 * 1024.0;

TEST(NcclValidation, A100NodeAllReduce8GiB)
{
  const auto r = simulate("dgx-a100", 1, CollectiveOp::AllReduce, first_gpus(8), {8 * GiB});
  EXPECT_NEAR(r[0].busbw_gbps, reference::a100_node_allreduce_busbw_gbps,
              0.10 * reference::a100_node_allreduce_busbw_gbps);
}

TEST(NcclValidation, A100SixteenNodesAllReduce8GiB)
{
  const auto r = simulate("dgx-a100", 16, CollectiveOp::AllReduce, first_gpus(128), {8 * GiB});
  EXPECT_NEAR(r[0].busbw_gbps, reference::a100_multinode_allreduce_busbw_gbps,
              0.10 * reference::a100_multinode_allreduce_busbw_gbps);
}

TEST(NcclValidation, SendRecvBetweenTwoNodesOverOneHdrNic)
{
  const auto r = simulate("dgx-a100", 2, CollectiveOp::SendRecv, {0, 8}, {1 * GiB});
  EXPECT_NEAR(r[0].busbw_gbps, reference::hdr_nic_sendrecv_busbw_gbps, 0.10 * reference::hdr_nic_sendrecv_busbw_gbps);
}

TEST(NcclValidation, H100NodeRingAllGather)
{
  const auto r = simulate("dgx-h100", 1, CollectiveOp::AllGather, first_gpus(8), {8 * GiB});
  EXPECT_NEAR(r[0].busbw_gbps, reference::h100_node_ring_busbw_gbps, 0.10 * reference::h100_node_ring_busbw_gbps);
}

TEST(NcclValidation, H100NodeNvlsAllReduce)
{
  const auto r = simulate("dgx-h100", 1, CollectiveOp::AllReduce, first_gpus(8), {8 * GiB});
  EXPECT_NEAR(r[0].busbw_gbps, reference::h100_node_nvls_allreduce_busbw_gbps,
              0.05 * reference::h100_node_nvls_allreduce_busbw_gbps);
}

// Not fitted: the NVL72's NVLink efficiency is the DGX B200 ring figure, NVLS's efficiency NCCL's own.
TEST(NcclValidation, Gb200Nvl72RackAllReduce8GiB)
{
  const auto r = simulate("gb200-nvl72", 18, CollectiveOp::AllReduce, first_gpus(72), {8 * GiB});
  EXPECT_NEAR(r[0].busbw_gbps, reference::gb200_nvl72_rack_allreduce_8gib_busbw_gbps,
              0.10 * reference::gb200_nvl72_rack_allreduce_8gib_busbw_gbps);
}

TEST(NcclValidation, BusBandwidthRisesWithSizeAndSmallSizesAreLatencyBound)
{
  std::vector<double> sizes;
  for (double s = 1024; s <= 8 * GiB; s *= 4)
    sizes.push_back(s);
  const auto r = simulate("dgx-a100", 16, CollectiveOp::AllReduce, first_gpus(128), sizes);
  // Rising, up to the dips NCCL's own protocol switches show (Echo's 128-GPU log: 128 KiB slower than 256 KiB,
  // 21% less busbw). Here the deepest is 16 -> 64 MiB, where NCCL 2.12's tuner leaves tree LL128 (each NIC
  // carrying two tree shares) for ring LL128 with its 254 steps' latency: 28% less busbw.
  for (size_t i = 1; i < r.size(); ++i)
    EXPECT_GE(r[i].busbw_gbps, 0.70 * r[i - 1].busbw_gbps) << "size " << sizes[i];
  // 1 KiB and 4 KiB take nearly the same time: latency, not bandwidth.
  EXPECT_LT(r[1].time_s / r[0].time_s, 1.1);
  EXPECT_LT(r[0].busbw_gbps, 0.01 * r.back().busbw_gbps);
}

} // namespace
} // namespace gputwin::sim
