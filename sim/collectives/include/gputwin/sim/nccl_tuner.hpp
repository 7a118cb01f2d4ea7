#pragma once
// How NCCL picks an algorithm and protocol for a collective, and the latency it pays: NCCL's own cost model
// (src/graph/tuning.cc of NCCL 2.8/2.9, the version of Echo's logs: per-algorithm/protocol base latency, per-hop
// hardware latency, bus bandwidth caps and corrections; NVLink SHARP from NCCL 2.30's tuning.cc, search.cc and
// transport/nvls.cc), fed with the bus bandwidth our topology offers. Plain C++, no SimGrid.

#include "gputwin/common/gpu_generation.hpp"
#include "gputwin/traces/collective_op.hpp"

#include <optional>
#include <string>

namespace gputwin::sim {

// NVLS: NVLink SHARP, the all-reduce the NVSwitches reduce and multicast (Hopper and later, inside one NVLink
// domain). NvlsTree: NVLS inside each domain and a tree between domains over the network.
// CollNetDirect, CollNetChain: the all-reduce across nodes reduced in the InfiniBand switches (SHARP, NCCL's
// CollNet), inside the node scattered to the NIC heads directly or along a chain.
enum class NcclAlgorithm { Ring, Tree, Nvls, NvlsTree, CollNetDirect, CollNetChain };
enum class NcclProtocol { LL, LL128, Simple };

std::string to_string(NcclAlgorithm a);
std::string to_string(NcclProtocol p);
// "ring" | "tree" | "nvls" | "nvlstree" | "collnetdirect" | "collnetchain"
std::optional<NcclAlgorithm> parse_nccl_algorithm(const std::string& text);
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
  // NVLink SHARP (nvls_usable()): the communicator's NVLink domain has NVSwitches with SHARP, NCCL has NVLS on, and
  // at least two of its GPUs share a domain. Then NCCL adds NVLS (one domain) or NVLS tree (several) for
  // all-reduce, each with Simple only.
  bool nvls = false;
  double nvls_efficiency = 0;        // NCCL's nvlsEfficiency for the GPU generation (nccl_nvls_efficiency)
  int nvls_heads = 0;                // NVLS channels of the graph: the domain's GPUs in it, at most 32 (nvls_heads)
  double intra_bus_bytes_per_s = 0;  // NVLink bandwidth per GPU at NCCL's efficiency (NVLS's intra-domain part)
  double net_bus_bytes_per_s = 0;    // the network bandwidth of the rails (NVLS tree's inter-domain part)
  double nvls_tree_max_bus_bytes_per_s = 0; // NCCL's per-channel NVLS tree cap x channels; 0 = none
  // CollNet (SHARP in the InfiniBand switches; NCCL_COLLNET_ENABLE with the SHARP plugin): all-reduce across nodes
  // as CollNetDirect (NVSwitch nodes only), CollNetChain, and NVLS across nodes, each with Simple only.
  bool collnet = false;
  bool nvswitch = false; // the domain's GPUs meet in NVSwitches (CollNetDirect needs them)
  int collnet_heads = 0; // NICs (rails) of a domain the communicator uses: CollNet's heads
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

// NCCL's NVLS efficiency by GPU generation (tuning.cc nvlsEfficiency: Hopper 0.85, Blackwell 0.74); 0 where the
// GPU has no NVLink SHARP (Ampere and older, CPUs).
double nccl_nvls_efficiency(GpuGeneration generation);

// NVLS channels of the domain's graph (search.cc: one head per GPU, "the more the better", at most
// NCCL_MAX_NVLS_ARITY = 32 of device.h).
int nvls_heads(int gpus_in_domain);

// Bus bandwidth of NVLS inside one domain (tuning.cc): each of the c heads' channels gets the GPU's NVLink
// bandwidth over c + 1 (search.cc ncclTopoSearchTryNvls: the head's own path counts twice), at NCCL's NVLS
// efficiency, of which (c - 1) / c carries data, doubled because all-reduce pipelines its reduce and its
// multicast: 2 x efficiency x bandwidth x (c - 1) / (c + 1). On 8 H100 at 370 GB/s: 489 GB/s, against the
// 480 GB/s the NCCL maintainers quote (NVIDIA/nccl-tests issue 212).
double nvls_bus_bytes_per_s(double intra_bus_bytes_per_s, double efficiency, int heads);

// NCCL's NVLS channels (thread blocks; transport/nvls.cc ncclNvlsTuning): 16 on Hopper; Blackwell 24 on one
// domain, across domains 32, or 24 with NICs of 48 GB/s and more beyond two domains (ncclNvlsTreeSm100Tuning,
// for up to 8 GPUs per node).
int nccl_nvls_channels(GpuGeneration generation, int nodes, double nic_bytes_per_s);

// NCCL's cap on NVLS tree's bus bandwidth across `nodes` domains: perChMaxNVLSTreeBws (Hopper 57.7 GB/s per
// channel on 2 nodes, 45.5 on more; Blackwell 96 and 80) times nccl_nvls_channels; 0 on one domain or older GPUs.
double nvls_tree_max_bus_bytes_per_s(GpuGeneration generation, int nodes, double nic_bytes_per_s);

// NCCL's latency of NVLS, NVLS tree and CollNet, which Simple alone runs (tuning.cc hwLatencies: NVLink 25 us per
// NVLS pass, + 18 us across nodes with CollNet; NVLS tree adds 2 log2(nodes) network hops of 20.9 us; CollNetDirect
// 2 (3.7 + 0.4 (ppn - 1)) + 31 us, CollNetChain 2 (ppn - 1) 2.8 + 30 us; one GPU per node: the tree's 14 us
// network latency).
double nccl_nvls_latency_s(NcclAlgorithm algorithm, int nodes, int ranks_per_node = 8);

// True for the algorithms that reduce in the switches (NVLS, NVLS tree, CollNet).
bool in_network_reduction(NcclAlgorithm algorithm);

} // namespace gputwin::sim
