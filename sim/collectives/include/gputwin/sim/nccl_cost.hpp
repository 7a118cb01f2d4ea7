#pragma once
// What a collective really costs once NCCL has chosen its algorithm and protocol: the channels NCCL's enqueue
// gives it (fewer for small messages), the calibrated fixed and per-step latencies of the protocol, the
// per-channel bandwidth limit, and the host's cost to issue the call. The choice itself is nccl_tuner's (NCCL's
// own built-in model); the figures here come from the cluster file's `nccl:` section. Plain C++, no SimGrid.

#include "gputwin/sim/nccl_tuner.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

namespace gputwin::sim {

// Channels (thread blocks) NCCL 2.8-2.12 runs one operation on (src/enqueue.cc getAlgoInfo): starting from
// `max_channels` it drops a channel, then halves the threads, while the bytes are fewer than channels x threads
// x a per-thread threshold (LL 8 B, times the ranks for ring LL; LL128 8 B; Simple 64 B).
// REQUIRES: max_channels >= 1, ranks >= 1.
int nccl_channels_used(NcclAlgorithm algorithm, NcclProtocol protocol, double bytes, int ranks, int max_channels);

// Bytes a protocol puts on the wire per payload byte: LL 16-byte lines carry 8 data bytes and 8 flag bytes (2),
// LL128 120 of every 128 bytes (128/120), Simple 1.
double nccl_wire_factor(NcclProtocol protocol);

const topo::NcclProtocolSpec& nccl_protocol_spec(const topo::NcclSpec& nccl, NcclProtocol protocol);

// The shape of one collective as its cost needs it.
struct NcclCostInput {
  CollectiveOp op = CollectiveOp::AllReduce;
  NcclAlgorithm algorithm = NcclAlgorithm::Ring;
  NcclProtocol protocol = NcclProtocol::Simple;
  double bytes = 0;
  int ranks = 1;
  int nodes = 1;
  double link_time_s = 0; // the busiest link's busy time for the payload bytes alone (no protocol overhead)
  double channel_payload_bytes = 0; // payload every channel together moves through one GPU (ring: 2(n-1)/n S)
};

struct NcclCost {
  int channels = 1;       // channels NCCL runs it on
  double latency_s = 0;   // kernel + protocol base + steps x per-step latency + channels x channel cost +
                          // network steps x channel network-step cost x (1 + log2 channels); tree LL across
                          // nodes pays the network part again per further line per thread
  double wire_factor = 1; // bytes on the links per payload byte, raised so the links take as long as the
                          // channels' own limit when that is the slower
  double transfer_s = 0;  // the busiest link's time with the wire factor: link_time_s x wire_factor
};

// The calibrated cost of `in` on `cluster`; trees' wire factor divided by NCCL's tree correction when the cluster
// asks for it (ring: intra-node steps on NVLink, inter-node steps 2 x nodes for
// all-reduce as NCCL counts them; tree: 2 ((ranks per node - 1) NVLink steps + log2(nodes) network steps)).
NcclCost nccl_cost(const topo::ClusterSpec& cluster, const NcclCostInput& in);

// Host time to issue one call from a thread that drives `gpus_per_thread` GPUs (nccl-tests -g G launches the
// operation on each of its G GPUs in turn). REQUIRES: gpus_per_thread >= 1.
double nccl_host_issue_s(const topo::NcclSpec& nccl, int gpus_per_thread);

// Time per call of a benchmark that issues calls back to back (nccl-tests' loop between two CUDA events): the
// host issues call i+1 while the GPUs run call i, so the slower of the two sets the pace.
double nccl_back_to_back_call_s(double device_s, double host_issue_s);

} // namespace gputwin::sim
