#pragma once
// A collective decomposed into the flows it puts on the links, as NCCL would run it on this cluster:
// rings (one channel per NIC rail, entering and leaving each node through that rail's NIC, as NCCL's ring
// search arranges), double binary trees across nodes for all-reduce, NVLink SHARP (NVLS, NVLS tree) for
// all-reduce where the NVSwitches reduce, direct flows for send/recv and all-to-all. Plain C++ on the cluster description: no SimGrid.
//
// Granularity: a ring's steps move the same bytes over the same hops, so each hop of each channel is ONE
// flow carrying all its steps' bytes; its route's latency is paid once, and the per-step latency of the
// algorithm is NCCL's own latency model (`choice.latency_s`: base + steps x per-hop hardware latency). That
// keeps a 1024-GPU all-reduce at 8192 flows instead of 2 million, with the same bytes on every link.

#include "gputwin/sim/nccl_cost.hpp"
#include "gputwin/sim/nccl_tuner.hpp"
#include "gputwin/topologies/cluster_spec.hpp"
#include "gputwin/traces/collective_op.hpp"

#include <optional>
#include <vector>

namespace gputwin::sim {

struct Flow {
  int src_gpu = 0;
  int dst_gpu = 0;
  double bytes = 0; // bytes on the wire (protocol overhead included)
  int steps = 1;    // sequential algorithm steps these bytes are spread over (their latency is NCCL's model)
};

struct CollectivePlan {
  CollectiveOp op = CollectiveOp::AllReduce;
  double bytes = 0; // nccl-tests size of the operation
  int ranks = 0;
  int nodes = 0;           // NVLink domains the communicator spans (NCCL's nodes; a domain is one node or several)
  int channels = 0;        // rings/trees the flows stand for (one per NIC rail across nodes, one inside a node)
  int domain_ranks = 0;    // the fewest of its ranks in one NVLink domain (NVLS needs two)
  int nccl_channels = 0;   // channels NCCL runs this size on (nccl_channels_used)
  NcclChoice choice;       // NCCL's choice; choice.latency_s is the calibrated latency (nccl_cost)
  double transfer_s = 0;   // closed form of the flows' time alone on ideal links (busiest link), without latency
  double host_issue_s = 0; // host time to issue the call (nccl_host_issue_s)
  std::vector<Flow> flows;
};

// Time per call of the plan run alone and back to back, as nccl-tests measures it: the larger of the GPUs' time
// (transfer + latency, what SimGrid gives with ideal links up to route latency) and the host's issue time.
double nccl_tests_call_s(const CollectivePlan& plan);

struct CollectiveOptions {
  std::optional<NcclAlgorithm> algorithm; // NCCL_ALGO
  std::optional<NcclProtocol> protocol;   // NCCL_PROTO
  int gpus_per_thread = 1;                // GPUs one host thread issues the call on (nccl-tests -g)
  bool flows = true;                      // false: choice and cost only (calibration), no flows
  // All-to-all(-v) with a rank-1 traffic matrix (MoE token exchange, models/token_exchange.hpp): each pair's bytes
  // by traces' all_to_all_pair_bytes. Empty weights: every pair bytes / n. REQUIRES: one weight per rank when set.
  AllToAllWeights all_to_all{};
  // All-to-all as DeepEP's internode kernels run it (deepseek-ai/DeepEP csrc/kernels/internode.cu): a pair on two
  // nodes goes over RDMA to the GPU of the destination node with the sender's local index (its own rail), then
  // over NVLink to the destination; pairs inside a node over NVLink directly. `internode_share` scales the RDMA
  // hop's bytes: DeepEP sends a token once per destination node however many of its experts are there (1: no
  // deduplication). A combine runs the same hops in reverse (`weights_at_sender`).
  bool two_hop = false;
  double internode_share = 1.0;
};

// The ring bus bandwidth the topology offers a communicator (what NCCL's graph search finds): within one
// NVLink domain the NVLink (or PCIe) bandwidth per GPU; across domains the smaller of that and the NIC bandwidth of
// the rails (the domain's NICs) the communicator's GPUs use, all at NCCL's efficiency for the link kind.
double ring_bus_bytes_per_s(const topo::ClusterSpec& cluster, const std::vector<int>& gpus);

// Decomposes `op` of `bytes` over the GPUs `gpus` (rank i = gpus[i]; global GPU ids, distinct). Send/recv
// pairs rank 2k with 2k+1 (both directions); broadcast roots at rank 0.
// REQUIRES: gpus non-empty, ids valid for `cluster`; throws std::invalid_argument otherwise.
CollectivePlan plan_collective(const topo::ClusterSpec& cluster, CollectiveOp op, const std::vector<int>& gpus,
                               double bytes, const CollectiveOptions& options = {});

// Rings per channel: the order of the GPUs (global ids) of each channel's ring. Exposed for tests.
std::vector<std::vector<int>> ring_orders(const topo::ClusterSpec& cluster, const std::vector<int>& gpus);

// Parent of each position 0..n-1 in the two trees of a double binary tree over n nodes (-1 for a root):
// NCCL's btree (root with one child) and its mirror (even n) or shift by one (odd n), so most nodes are
// interior in only one of them (NCCL src/graph/trees.cc; Sanders et al. 2009).
std::vector<std::vector<int>> double_binary_tree_parents(int n);

} // namespace gputwin::sim
