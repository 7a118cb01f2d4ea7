#pragma once
// How NCCL picks an algorithm and protocol for a collective, and the latency it pays: NCCL's own cost model
// (src/graph/tuning.cc of NCCL 2.8/2.9, the version of Echo's logs: per-algorithm/protocol base latency, per-hop
// hardware latency, bus bandwidth caps and corrections), fed with the bus bandwidth our topology offers. Plain
// C++, no SimGrid.

#include "gputwin/traces/collective_op.hpp"

#include <optional>
#include <string>

namespace gputwin::sim {

enum class NcclAlgorithm { Ring, Tree };
enum class NcclProtocol { LL, LL128, Simple };

std::string to_string(NcclAlgorithm a);
std::string to_string(NcclProtocol p);
std::optional<NcclAlgorithm> parse_nccl_algorithm(const std::string& text); // "ring" | "tree"
std::optional<NcclProtocol> parse_nccl_protocol(const std::string& text);   // "ll" | "ll128" | "simple"

// Who takes part and what the links offer, as NCCL's tuner sees it.
struct TunerInput {
  CollectiveOp op = CollectiveOp::AllReduce;
  double bytes = 0; // nccl-tests size of the operation
  int ranks = 1;
  int nodes = 1;
  bool intra_node_nvlink = true;   // NVLink between the node's GPUs (else PCIe)
  double ring_bus_bytes_per_s = 0; // bus bandwidth the ring graph offers (all channels), from the topology
  bool ampere = false;             // NCCL caps A100 (sm_80) bus bandwidth at 235 GB/s
  bool ll128_enabled = true;
  // The host CPU is AMD (EPYC: DGX A100, Azure ND A100 v4) rather than Intel: NCCL caps LL's bus bandwidth across
  // nodes by CPU vendor (llMaxBws: 22.5 / 19 GB/s AMD, 39 / 20.4 Intel at 2 / more nodes).
  bool amd_cpu = true;
  std::optional<NcclAlgorithm> force_algorithm; // like NCCL_ALGO
  std::optional<NcclProtocol> force_protocol;   // like NCCL_PROTO
};

struct NcclChoice {
  NcclAlgorithm algorithm = NcclAlgorithm::Ring;
  NcclProtocol protocol = NcclProtocol::Simple;
  double latency_s = 0;          // NCCL's latency term for this choice (base + per-step hardware latency)
  double bandwidth_fraction = 1; // share of the link bandwidth the protocol leaves to data (Simple: 1, LL128: 0.92)
  double predicted_time_s = 0;   // NCCL's own estimate: latency + bytes / algorithm bandwidth
  int steps = 1;                 // communication steps of the algorithm (ring all-reduce: 2(n-1))
};

// NCCL's choice: the (algorithm, protocol) with the smallest predicted time, ties to the first in the
// order Tree/Ring x LL/LL128/Simple as NCCL iterates. Only all-reduce may use Tree (NCCL 2.8-2.12).
// REQUIRES: ranks >= 1, bytes >= 0, ring_bus_bytes_per_s > 0.
NcclChoice choose_nccl_algorithm(const TunerInput& input);

// NCCL's correction of a tree's bandwidth for medium sizes (tuning.cc treeCorrectionFactor, powers of two from
// 64 B; 1 from 256 MiB on): trees fall short of their pipelined bandwidth there.
double nccl_tree_correction(NcclProtocol protocol, double bytes);

// The choice for one given algorithm and protocol (what NCCL_ALGO/NCCL_PROTO would force).
NcclChoice evaluate_nccl_algorithm(const TunerInput& input, NcclAlgorithm algorithm, NcclProtocol protocol);

} // namespace gputwin::sim
