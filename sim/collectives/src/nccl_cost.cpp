#include "gputwin/sim/nccl_cost.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gputwin::sim {

namespace {

// NCCL 2.8-2.12 src/include/devcomm.h: threads per channel and bytes per thread before another channel is used.
constexpr int ll_max_threads = 512;     // NCCL_LL_MAX_NTHREADS
constexpr int ll_lines_per_thread = 8;  // NCCL_LL_LINES_PER_THREAD: an LL step's lines per thread
constexpr int ll128_max_threads = 640;  // NCCL_LL128_MAX_NTHREADS
constexpr int simple_max_threads = 512; // NCCL_SIMPLE_MAX_NTHREADS
constexpr double ll_thread_threshold_bytes = 8;      // NCCL_LL_THREAD_THRESHOLD
constexpr double ll128_thread_threshold_bytes = 8;   // NCCL_LL128_THREAD_THRESHOLD
constexpr double simple_thread_threshold_bytes = 64; // NCCL_SIMPLE_THREAD_THRESHOLD

int log2_floor(int x)
{
  int l = 0;
  while (x >= 2) {
    x /= 2;
    ++l;
  }
  return l;
}

// How much longer one network step takes on `c` channels than on one: the step ends when the slowest channel's
// transfer has landed (and its proxy has posted the next), and the expected maximum of c such delays grows with
// the logarithm of c (extreme-value statistics of exponential-tailed delays: H(c) ~ ln c + 0.58); 1 + log2 c,
// which fitted Echo's 16-128 GPU logs better than H(c), sqrt(c) or c.
double slowest_channel_factor(int c)
{
  return 1.0 + std::log2(static_cast<double>(std::max(1, c)));
}

} // namespace

int nccl_channels_used(NcclAlgorithm algorithm, NcclProtocol protocol, double bytes, int ranks, int max_channels)
{
  if (max_channels < 1 || ranks < 1)
    throw std::invalid_argument("nccl channels: max_channels and ranks must be >= 1");
  int threads = protocol == NcclProtocol::LL ? ll_max_threads
                : protocol == NcclProtocol::LL128 ? ll128_max_threads
                                                  : simple_max_threads;
  double threshold = protocol == NcclProtocol::LL ? ll_thread_threshold_bytes
                     : protocol == NcclProtocol::LL128 ? ll128_thread_threshold_bytes
                                                       : simple_thread_threshold_bytes;
  if (algorithm == NcclAlgorithm::Ring && protocol == NcclProtocol::LL)
    threshold *= ranks; // tuning.cc: threadThresholds[RING][LL] *= nRanks
  int channels = max_channels;
  while (bytes < channels * threads * threshold) {
    if (channels >= 2)
      --channels;
    else if (threads % 128 == 0)
      threads /= 2;
    else
      break;
  }
  return channels;
}

double nccl_wire_factor(NcclProtocol protocol)
{
  switch (protocol) {
  case NcclProtocol::LL: return 2.0;
  case NcclProtocol::LL128: return 128.0 / 120.0;
  case NcclProtocol::Simple: return 1.0;
  }
  return 1.0;
}

const topo::NcclProtocolSpec& nccl_protocol_spec(const topo::NcclSpec& nccl, NcclProtocol protocol)
{
  return protocol == NcclProtocol::LL ? nccl.ll : protocol == NcclProtocol::LL128 ? nccl.ll128 : nccl.simple;
}

NcclCost nccl_cost(const topo::ClusterSpec& cluster, const NcclCostInput& in)
{
  const topo::NcclSpec& nccl = cluster.nccl;
  const topo::NcclProtocolSpec& proto = nccl_protocol_spec(nccl, in.protocol);
  const int max_channels = in.nodes > 1 ? nccl.channels_inter_node : nccl.channels_intra_node;
  NcclCost cost;
  cost.channels = nccl_channels_used(in.algorithm, in.protocol, in.bytes, in.ranks, max_channels);
  if (in.ranks <= 1)
    return cost;
  if (in_network_reduction(in.algorithm)) {
    // NVLS and CollNet run Simple on their own channels; their latency is NCCL's (tuning.cc), not Echo's ring/tree
    // fit, and their link time already holds NVLS's efficiency (collective_plan).
    cost.channels = nccl_nvls_channels(cluster.gpu.generation, in.nodes, cluster.nic.bytes_per_s);
    cost.latency_s = nccl.kernel_s + nccl_nvls_latency_s(in.algorithm, in.nodes, std::max(1, in.ranks / in.nodes));
    cost.transfer_s = in.link_time_s;
    return cost;
  }

  const bool p2p = in.op == CollectiveOp::SendRecv || in.op == CollectiveOp::AllToAll;
  const int per_node = std::max(1, in.ranks / in.nodes);
  double steps_s = 0;
  int net_steps = 0; // algorithm steps that cross the network
  if (p2p) {
    steps_s = in.nodes > 1 ? proto.net_step_s : proto.nvlink_step_s;
  } else if (in.algorithm == NcclAlgorithm::Tree) {
    net_steps = 2 * log2_floor(in.nodes);
    steps_s = 2 * (per_node - 1) * proto.nvlink_step_s + net_steps * proto.net_step_s;
  } else {
    // NCCL's step count (tuning.cc): all-reduce 2(n-1) steps of which 2 x nodes cross the network; all-gather
    // and reduce-scatter n-1 and nodes-1; broadcast n and nodes.
    const int n = in.ranks, m = in.nodes;
    const bool all_reduce = in.op == CollectiveOp::AllReduce;
    const bool gather_scatter = in.op == CollectiveOp::AllGather || in.op == CollectiveOp::ReduceScatter;
    const int steps = all_reduce ? 2 * (n - 1) : gather_scatter ? n - 1 : n;
    const int inter = m <= 1 ? 0 : all_reduce ? std::min(steps, 2 * m) : gather_scatter ? m - 1 : m;
    steps_s = (steps - inter) * proto.nvlink_step_s + inter * proto.net_step_s;
    net_steps = inter;
  }
  // Every channel (thread block) pays its own fixed cost (work fetch, flag synchronisation), and every step that
  // crosses the network waits for the slowest of the channels' transfers: small messages run on few channels
  // (nccl_channels_used), so their time grows with the channels NCCL gives them rather than with the bytes.
  const double slowest_channel_s = net_steps * nccl.channel_net_step_s * slowest_channel_factor(cost.channels);
  const double channels_s = p2p ? 0.0 : cost.channels * nccl.channel_s + slowest_channel_s;
  cost.latency_s = nccl.kernel_s + proto.base_latency_s + steps_s + channels_s;
  // Tree LL across nodes: a channel's chunk is a multiple of one 8-byte line per thread (NCCL's LL minChunkSize,
  // nthreads x 8 B), and a chunk of more than one line per thread costs the network levels and the slowest channel
  // again for each further line (the proxy forwards a step once its lines are complete; within a node the lines
  // stream). Only with every channel in use (large LL trees: 128 KiB and up at 16 channels) does a channel hold
  // more than one line per thread. A chunk holds at most one LL step, NCCL_LL_LINES_PER_THREAD lines per thread;
  // larger messages take further steps, which NCCL pipelines (the flows' bandwidth then sets their pace), so the
  // extra passes stop at 7. The step cost is inferred from Echo's logs (128 KiB on 64 and 128 GPUs takes twice
  // the 256 KiB tree LL128 time), not read from NCCL's code; no parameter was fitted to it.
  if (in.algorithm == NcclAlgorithm::Tree && in.protocol == NcclProtocol::LL && !p2p) {
    const double line_bytes = static_cast<double>(cost.channels) * ll_max_threads * 8.0; // one line per thread
    const double lines_per_thread = std::min<double>(std::ceil(in.bytes / line_bytes), ll_lines_per_thread);
    if (lines_per_thread > 1)
      cost.latency_s += (lines_per_thread - 1) * (net_steps * proto.net_step_s + slowest_channel_s);
  }

  // Each channel moves at most channel_bytes_per_s of payload: with few channels (small messages) or a slow
  // protocol that, not the links, limits the transfer. Raising the wire factor makes the flows take that long.
  const double wire = nccl_wire_factor(in.protocol);
  cost.wire_factor = wire;
  if (!p2p && in.link_time_s > 0 && in.channel_payload_bytes > 0) {
    const double channel_s = in.channel_payload_bytes / (cost.channels * proto.channel_bytes_per_s);
    cost.wire_factor = std::max(wire, channel_s / in.link_time_s);
  }
  // A tree's pipeline falls short at medium sizes by NCCL's own correction factors.
  if (in.algorithm == NcclAlgorithm::Tree && !p2p && nccl.tree_correction)
    cost.wire_factor /= nccl_tree_correction(in.protocol, in.bytes);
  cost.transfer_s = in.link_time_s * cost.wire_factor;
  return cost;
}

double nccl_host_issue_s(const topo::NcclSpec& nccl, int gpus_per_thread)
{
  if (gpus_per_thread < 1)
    throw std::invalid_argument("nccl host issue: gpus_per_thread must be >= 1");
  return nccl.host_call_s + gpus_per_thread * nccl.host_launch_s_per_gpu;
}

double nccl_back_to_back_call_s(double device_s, double host_issue_s)
{
  return std::max(device_s, host_issue_s);
}

} // namespace gputwin::sim
