#include "gputwin/sim/nccl_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace gputwin::sim {

std::string to_string(NcclAlgorithm a)
{
  switch (a) {
  case NcclAlgorithm::Ring: return "ring";
  case NcclAlgorithm::Tree: return "tree";
  case NcclAlgorithm::Nvls: return "nvls";
  case NcclAlgorithm::NvlsTree: return "nvlstree";
  case NcclAlgorithm::CollNetDirect: return "collnetdirect";
  case NcclAlgorithm::CollNetChain: return "collnetchain";
  }
  return "?";
}

std::string to_string(NcclProtocol p)
{
  switch (p) {
  case NcclProtocol::LL: return "ll";
  case NcclProtocol::LL128: return "ll128";
  case NcclProtocol::Simple: return "simple";
  }
  return "?";
}

std::optional<NcclAlgorithm> parse_nccl_algorithm(const std::string& text)
{
  if (text == "ring")
    return NcclAlgorithm::Ring;
  if (text == "tree")
    return NcclAlgorithm::Tree;
  if (text == "nvls")
    return NcclAlgorithm::Nvls;
  if (text == "nvlstree")
    return NcclAlgorithm::NvlsTree;
  if (text == "collnetdirect")
    return NcclAlgorithm::CollNetDirect;
  if (text == "collnetchain")
    return NcclAlgorithm::CollNetChain;
  return std::nullopt;
}

std::optional<NcclProtocol> parse_nccl_protocol(const std::string& text)
{
  if (text == "ll")
    return NcclProtocol::LL;
  if (text == "ll128")
    return NcclProtocol::LL128;
  if (text == "simple")
    return NcclProtocol::Simple;
  return std::nullopt;
}

namespace {

// NCCL 2.8 src/graph/tuning.cc, microseconds. Index [algorithm: tree, ring][protocol: LL, LL128, Simple].
constexpr double base_latency_us[2][3] = {{4.4, 4.4, 0.0}, {3.6, 10.0, 8.4}};
// Per-hop hardware latency, [hardware: NVLink, PCIe, network][algorithm][protocol].
constexpr double hw_latency_us[3][2][3] = {
    {{0.52, 1.2, 28.0}, {0.47, 1.9, 3.4}}, // NVLink
    {{1.0, 1.9, 28.0}, {1.0, 2.5, 5.7}},   // PCIe
    {{5.0, 8.5, 50.0}, {2.7, 4.0, 9.6}},   // network
};
// LL128's maximum bus bandwidth per channel, GB/s, for all-reduce (NCCL 2.8 ll128MaxBwPerCh; the other
// collectives are close).
constexpr double ll128_max_gbps_per_channel = 16.9;
// Channels of NCCL's ring/tree graph on DGX-class nodes (one per NIC rail); it only scales the per-channel caps.
constexpr int nccl_graph_channels = 8;
// Trees fall short of the model for medium sizes; NCCL corrects by these factors, sizes 64 B << i.
constexpr double tree_correction[3][22] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9},
};

int index_of(NcclAlgorithm a)
{
  return a == NcclAlgorithm::Tree ? 0 : 1;
}
int index_of(NcclProtocol p)
{
  return p == NcclProtocol::LL ? 0 : p == NcclProtocol::LL128 ? 1 : 2;
}

enum class protocol_index { ll = 0, ll128 = 1, simple = 2 };
bool protocol_is(protocol_index which, int p)
{
  return static_cast<int>(which) == p;
}

int ring_steps(CollectiveOp op, int n)
{
  switch (op) {
  case CollectiveOp::AllReduce: return 2 * (n - 1);
  case CollectiveOp::AllGather:
  case CollectiveOp::ReduceScatter: return n - 1;
  default: return n;
  }
}

int log2_floor(double x)
{
  int l = 0;
  while (x >= 2) {
    x /= 2;
    ++l;
  }
  return l;
}

} // namespace

double nccl_nvls_efficiency(GpuGeneration generation)
{
  switch (generation) {
  case GpuGeneration::Hopper: return 0.85;
  case GpuGeneration::Blackwell: return 0.74;
  default: return 0.0;
  }
}

int nvls_heads(int gpus_in_domain)
{
  constexpr int max_nvls_arity = 32; // NCCL_MAX_NVLS_ARITY
  return std::clamp(gpus_in_domain, 0, max_nvls_arity);
}

double nvls_bus_bytes_per_s(double intra_bus_bytes_per_s, double efficiency, int heads)
{
  if (heads < 2)
    return 0.0;
  return 2.0 * efficiency * intra_bus_bytes_per_s * (heads - 1) / (heads + 1);
}

int nccl_nvls_channels(GpuGeneration generation, int nodes, double nic_bytes_per_s)
{
  if (generation != GpuGeneration::Blackwell)
    return 16;
  if (nodes < 2)
    return 24;
  return nodes == 2 || nic_bytes_per_s < 48e9 ? 32 : 24;
}

double nvls_tree_max_bus_bytes_per_s(GpuGeneration generation, int nodes, double nic_bytes_per_s)
{
  if (nodes < 2)
    return 0.0;
  const bool two = nodes == 2;
  const int channels = nccl_nvls_channels(generation, nodes, nic_bytes_per_s);
  if (generation == GpuGeneration::Hopper)
    return (two ? 57.7e9 : 45.5e9) * channels;
  if (generation == GpuGeneration::Blackwell)
    return (two ? 96e9 : 80e9) * channels;
  return 0.0;
}

double nccl_nvls_latency_s(NcclAlgorithm algorithm, int nodes, int ranks_per_node)
{
  // tuning.cc hwLatencies [NVLINK | NET][algorithm][Simple]; with one GPU per node the network latency is the
  // tree's.
  constexpr double nvls_nvlink_us = 25.0, nvls_net_us = 18.0, nvls_tree_net_us = 20.9;
  constexpr double collnet_direct_nvlink_us = 3.7, collnet_direct_net_us = 31.0;
  constexpr double collnet_chain_nvlink_us = 2.8, collnet_chain_net_us = 30.0, tree_net_us = 14.0;
  const int ppn = std::max(1, ranks_per_node);
  const auto net = [&](double us) { return ppn == 1 ? tree_net_us : us; };
  double us = 0;
  switch (algorithm) {
  case NcclAlgorithm::Nvls: us = nvls_nvlink_us + (nodes > 1 ? net(nvls_net_us) : 0.0); break;
  case NcclAlgorithm::NvlsTree: us = nvls_nvlink_us + 2 * log2_floor(std::max(1, nodes)) * net(nvls_tree_net_us); break;
  case NcclAlgorithm::CollNetDirect:
    us = 2 * (std::min(1, ppn - 1) * collnet_direct_nvlink_us + (ppn - 1) * 0.4) + net(collnet_direct_net_us);
    break;
  case NcclAlgorithm::CollNetChain: us = 2 * (ppn - 1) * collnet_chain_nvlink_us + net(collnet_chain_net_us); break;
  default: break;
  }
  return us * 1e-6;
}

bool in_network_reduction(NcclAlgorithm a)
{
  return a == NcclAlgorithm::Nvls || a == NcclAlgorithm::NvlsTree || a == NcclAlgorithm::CollNetDirect ||
         a == NcclAlgorithm::CollNetChain;
}

namespace {

// NVLS and NVLS tree all-reduce (NCCL 2.30 tuning.cc): the intra-domain NVLS bus bandwidth, for NVLS tree capped
// by the network (doubled on two nodes, where each tree edge is the only one) and NCCL's per-channel NVLS tree
// maximum, for NVLS across nodes (CollNet) by the rails; algorithm bandwidth n / (2 (n - 1)) of it, as for the
// ring. CollNetDirect and CollNetChain: tuning.cc's NVLink-bound bus bandwidth, halved. Simple only.
NcclChoice evaluate_in_network(const TunerInput& in, NcclAlgorithm algorithm)
{
  NcclChoice c;
  c.algorithm = algorithm;
  c.protocol = NcclProtocol::Simple;
  c.steps = 1;
  const int n = in.ranks;
  if (n == 1) {
    c.steps = 0;
    return c;
  }
  const int ppn = std::max(1, n / in.nodes);
  double bus = nvls_bus_bytes_per_s(in.intra_bus_bytes_per_s, in.nvls_efficiency, in.nvls_heads);
  if (algorithm == NcclAlgorithm::NvlsTree) {
    bus = std::min(bus, in.net_bus_bytes_per_s * (in.nodes <= 2 ? 2.0 : 1.0));
    if (in.nvls_tree_max_bus_bytes_per_s > 0)
      bus = std::min(bus, in.nvls_tree_max_bus_bytes_per_s);
  } else if (algorithm == NcclAlgorithm::Nvls && in.nodes > 1) {
    bus = std::min(bus, in.net_bus_bytes_per_s); // NVLS with CollNet across nodes
  } else if (algorithm == NcclAlgorithm::CollNetDirect) {
    // Every GPU should have a NIC of its own: the GPU:NIC ratio halfway to 1 divides it; 0.85 from Hopper on.
    double factor = static_cast<double>(ppn) / std::max(1, in.collnet_heads);
    factor -= (factor - 1) / 2;
    bus = in.intra_bus_bytes_per_s / factor * (in.ampere ? 1.0 : 0.85);
  } else if (algorithm == NcclAlgorithm::CollNetChain) {
    bus = in.intra_bus_bytes_per_s;
  }
  c.latency_s = nccl_nvls_latency_s(algorithm, in.nodes, ppn);
  // Bus to algorithm bandwidth: NVLS and NVLS tree as the ring, n / 2(n - 1); CollNet 0.5 (tuning.cc).
  const bool collnet_algorithm = algorithm == NcclAlgorithm::CollNetDirect || algorithm == NcclAlgorithm::CollNetChain;
  const double algo = collnet_algorithm ? bus * 0.5 : bus * n / (2.0 * (n - 1));
  c.predicted_time_s = algo > 0 ? c.latency_s + in.bytes / algo : std::numeric_limits<double>::infinity();
  return c;
}

// The in-network reductions apply where NCCL 2.30 enables them: all-reduce only (NVLS all-gather and
// reduce-scatter need CollNet across nodes, and on one domain NCCL's own model gives them less bandwidth than the
// ring); NVLS on one domain (or across with CollNet), NVLS tree on several, CollNet across nodes when it is on
// (CollNetDirect on NVSwitch nodes only).
bool in_network_applies(const TunerInput& in, NcclAlgorithm algorithm)
{
  if (in.op != CollectiveOp::AllReduce || in.ranks < 2)
    return false;
  switch (algorithm) {
  case NcclAlgorithm::Nvls: return in.nvls && (in.nodes == 1 || in.collnet);
  case NcclAlgorithm::NvlsTree: return in.nvls && in.nodes > 1;
  case NcclAlgorithm::CollNetDirect: return in.collnet && in.nodes > 1 && in.nvswitch;
  case NcclAlgorithm::CollNetChain: return in.collnet && in.nodes > 1;
  default: return false;
  }
}

} // namespace

double nccl_tree_correction(NcclProtocol protocol, double bytes)
{
  const int log_size = log2_floor(std::max(1.0, bytes / 64.0));
  return log_size < 22 ? tree_correction[index_of(protocol)][log_size] : 1.0;
}

NcclChoice evaluate_nccl_algorithm(const TunerInput& in, NcclAlgorithm algorithm, NcclProtocol protocol)
{
  if (in.ranks < 1 || in.nodes < 1 || in.bytes < 0 || !(in.ring_bus_bytes_per_s > 0))
    throw std::invalid_argument("nccl tuner: ranks, nodes >= 1, bytes >= 0 and a positive bandwidth required");
  if (in_network_reduction(algorithm))
    return evaluate_in_network(in, algorithm);
  const int a = index_of(algorithm), p = index_of(protocol);
  const int n = in.ranks;
  const int per_node = std::max(1, n / in.nodes);
  const bool is_p2p = in.op == CollectiveOp::SendRecv || in.op == CollectiveOp::AllToAll;

  NcclChoice c;
  c.algorithm = algorithm;
  c.protocol = protocol;
  c.steps = algorithm == NcclAlgorithm::Ring ? (is_p2p ? 1 : ring_steps(in.op, n)) : 2 * log2_floor(in.nodes);
  if (n == 1) {
    c.steps = 0;
    return c;
  }

  // Bus bandwidth of this algorithm/protocol, GB/s, with NCCL's refinements (tuning.cc of NCCL 2.8/2.9, the
  // version of Echo's logs). `protocol_share` keeps only the protocol's own share of the link (LL's flags, LL128's
  // 120 of 128 bytes): that is what the simulated flows pay on the wire, while caps such as the per-channel tree
  // maximum or the CPU's LL limit only steer the choice.
  double bus_gbps = in.ring_bus_bytes_per_s / 1e9;
  if (in.ampere)
    bus_gbps = std::min(bus_gbps, 235.0);
  double protocol_share = 1.0;
  const int channels = nccl_graph_channels; // NCCL's graph: one channel per NIC rail on DGX-class nodes
  const int size_index = in.nodes <= 2 ? in.nodes - 1 : 2;
  // LL's bus bandwidth limit: one node by GPU generation; across nodes by the host CPU, because LL over the
  // network lands in host memory that the receiving GPU polls across PCIe (NCCL: "for multi-node, we look at
  // CPU type").
  const double ll_max_gbps = in.nodes == 1 ? (in.ampere ? 87.7 : 39.0)
                                           : (in.amd_cpu ? (size_index == 1 ? 22.5 : 19.0)
                                                         : (size_index == 1 ? 39.0 : 20.4));
  const double tree_max_gbps_per_channel = in.ampere ? (size_index == 0 ? 24.0 : size_index == 1 ? 22.5 : 16.0)
                                                     : (size_index == 0 ? 26.5 : size_index == 1 ? 18.5 : 10.0);
  if (algorithm == NcclAlgorithm::Ring && protocol_is(protocol_index::ll, p)) {
    protocol_share = (in.nodes > 1 || in.op == CollectiveOp::AllReduce) ? 1.0 / 4.0 : 1.0 / 3.0;
    bus_gbps = std::min(bus_gbps * protocol_share, ll_max_gbps);
  }
  if (algorithm == NcclAlgorithm::Ring && protocol_is(protocol_index::ll128, p)) {
    protocol_share = per_node < 2 ? 0.7 : 0.92;
    bus_gbps = std::min(bus_gbps * protocol_share, ll128_max_gbps_per_channel * channels);
  }
  if (algorithm == NcclAlgorithm::Tree) {
    bus_gbps = std::min(bus_gbps * 0.92, tree_max_gbps_per_channel * channels);
    if (protocol_is(protocol_index::ll, p)) {
      protocol_share = 1.0 / 3.8;
      bus_gbps = std::min(bus_gbps * protocol_share, ll_max_gbps);
    }
    if (protocol_is(protocol_index::ll128, p)) {
      protocol_share = in.nodes == 1 ? 7.0 / 9.0 : 0.915;
      bus_gbps = std::min(bus_gbps * protocol_share, ll128_max_gbps_per_channel * channels);
    }
  }
  c.bandwidth_fraction = protocol_share;

  // Latency: base + per-step hardware latency, intra-node steps on NVLink/PCIe, inter-node on the network.
  const int intra_hw = in.intra_node_nvlink ? 0 : 1;
  double intra_us = hw_latency_us[intra_hw][a][p];
  const double inter_us = hw_latency_us[2][a][p];
  if (in.nodes > 1 && protocol == NcclProtocol::LL)
    intra_us *= 1.8;
  double latency_us = base_latency_us[a][p];
  if (is_p2p) {
    latency_us += in.nodes > 1 ? inter_us : intra_us;
  } else if (algorithm == NcclAlgorithm::Ring) {
    const int steps = ring_steps(in.op, n);
    const int inter_steps = in.nodes > 1 ? ring_steps(in.op, in.nodes) : 0;
    latency_us += (steps - inter_steps) * intra_us + inter_steps * inter_us;
  } else {
    latency_us += 2 * ((per_node - 1) * intra_us + log2_floor(in.nodes) * inter_us);
  }

  // Algorithm bandwidth: ring moves n/steps of the bus bandwidth, a tree half of it.
  double algo_gbps = algorithm == NcclAlgorithm::Ring && !is_p2p
                         ? bus_gbps * n / ring_steps(in.op, n)
                         : (algorithm == NcclAlgorithm::Ring ? bus_gbps : bus_gbps * 0.5);
  if (algorithm == NcclAlgorithm::Tree)
    algo_gbps *= nccl_tree_correction(protocol, in.bytes);
  if (algorithm == NcclAlgorithm::Ring && protocol == NcclProtocol::Simple && in.nodes > 1 &&
      in.op == CollectiveOp::AllReduce && in.bytes >= n / 16.0 * 65536)
    latency_us *= 1.9; // NCCL: "plateau effect of ring"

  c.latency_s = latency_us * 1e-6;
  c.predicted_time_s = c.latency_s + in.bytes / (algo_gbps * 1e9);
  return c;
}

NcclChoice choose_nccl_algorithm(const TunerInput& in)
{
  NcclChoice best;
  double best_time = std::numeric_limits<double>::infinity();
  for (const NcclAlgorithm algorithm : {NcclAlgorithm::Tree, NcclAlgorithm::Ring, NcclAlgorithm::CollNetDirect,
                                        NcclAlgorithm::CollNetChain, NcclAlgorithm::Nvls, NcclAlgorithm::NvlsTree}) {
    if (in.force_algorithm && *in.force_algorithm != algorithm)
      continue;
    if (in_network_reduction(algorithm)) {
      if (!in_network_applies(in, algorithm) || (in.force_protocol && *in.force_protocol != NcclProtocol::Simple))
        continue;
      const NcclChoice c = evaluate_in_network(in, algorithm);
      if (c.predicted_time_s < best_time) {
        best = c;
        best_time = c.predicted_time_s;
      }
      continue;
    }
    // Trees: all-reduce across nodes only (within a node NCCL's tree is a chain, which the ring beats).
    if (algorithm == NcclAlgorithm::Tree && (in.op != CollectiveOp::AllReduce || in.nodes < 2))
      continue;
    for (const NcclProtocol protocol : {NcclProtocol::LL, NcclProtocol::LL128, NcclProtocol::Simple}) {
      if (in.force_protocol && *in.force_protocol != protocol)
        continue;
      if (protocol == NcclProtocol::LL128 && !in.ll128_enabled && !in.force_protocol)
        continue;
      // Point-to-point operations go through NCCL's p2p path, which this model runs with Simple only.
      const bool p2p = in.op == CollectiveOp::SendRecv || in.op == CollectiveOp::AllToAll;
      if (p2p && protocol != NcclProtocol::Simple && !in.force_protocol)
        continue;
      const NcclChoice c = evaluate_nccl_algorithm(in, algorithm, protocol);
      if (c.predicted_time_s < best_time) {
        best = c;
        best_time = c.predicted_time_s;
      }
    }
  }
  if (!std::isfinite(best_time) && in.force_algorithm && (*in.force_algorithm == NcclAlgorithm::Nvls ||
                                                          *in.force_algorithm == NcclAlgorithm::NvlsTree) && !in.nvls)
    throw std::invalid_argument("NVLS needs a Hopper or Blackwell GPU, NVSwitches, nccl.nvls true and two or more "
                                "of the communicator's GPUs in each NVLink domain");
  if (!std::isfinite(best_time) && in.force_algorithm && in_network_reduction(*in.force_algorithm) && !in.collnet)
    throw std::invalid_argument("CollNet needs nccl.collnet true (SHARP switches and NCCL's SHARP plugin) and an "
                                "all-reduce across nodes");
  if (!std::isfinite(best_time))
    throw std::invalid_argument("nccl tuner: the forced algorithm does not apply to " + to_string(in.op) + " on " +
                                std::to_string(in.nodes) + " node(s)");
  return best;
}

} // namespace gputwin::sim
