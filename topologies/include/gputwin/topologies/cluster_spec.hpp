#pragma once
// A GPU cluster as described in its YAML file (topologies/clusters/*.yaml): GPU kind, node internals,
// NICs with their rail mapping, the inter-node fat tree, and how NCCL performs on these links.
// SI units throughout: bytes, bytes per second, seconds, FLOP/s.

#include <cstdint>
#include <string>
#include <vector>

namespace gputwin::topo {

struct GpuSpec {
  std::string kind;           // "a100-sxm4-80gb"
  double peak_bf16_flops = 0; // dense tensor-core peak, FLOP/s
  int64_t hbm_bytes = 0;
  double hbm_bytes_per_s = 0;
};

// GPU <-> GPU inside a node through NVSwitch: each GPU has one logical full-duplex link to the switch.
struct NvlinkSpec {
  double bytes_per_s = 0; // per GPU, per direction (line rate)
  double latency_s = 0;   // one GPU -> switch hop
  int switch_chips = 0;   // physical NVSwitch chips (the graph keeps one logical crossbar per node)
};

// GPU <-> NIC: each PCIe switch connects gpus_per_node / switches_per_node GPUs and as many NICs.
struct PcieSpec {
  double bytes_per_s = 0; // per device link, per direction
  double latency_s = 0;
  int switches_per_node = 0;
};

struct NicSpec {
  int count = 0;                      // per node
  double bytes_per_s = 0;             // per direction (200 Gb/s HDR = 25e9 B/s)
  double latency_s = 0;               // NIC port -> leaf switch hop, including the NIC
  std::vector<std::vector<int>> gpus; // gpus[n]: local GPUs NIC n serves (rail mapping), size == count
};

struct FabricSpec {
  int levels = 0;              // maximum fat-tree levels (1 = one switch, 2 = leaf/spine, 3 = leaf/spine/core)
  int switch_radix = 0;        // ports per switch
  double oversubscription = 1; // leaf down:up port ratio (1 = non-blocking)
  bool rail_optimized = true;  // leaf switches per rail (NIC n of every node on rail n's leaves)
  double link_bytes_per_s = 0; // switch-to-switch links, per direction
  double switch_latency_s = 0; // per switch traversal, added to each switch-to-switch hop
};

// How NCCL performs on these links (calibration, each value with its source in the YAML): the fraction of
// line rate its Simple protocol reaches, per link kind.
struct NcclSpec {
  double nvlink_efficiency = 1;
  double pcie_efficiency = 1;
  double net_efficiency = 1; // NIC and fabric links
};

struct ClusterSpec {
  std::string name;   // "dgx-a100"
  std::string source; // file it came from ("<built-in dgx-a100>" or a path)
  GpuSpec gpu;
  int nodes = 0;
  int gpus_per_node = 0;
  NvlinkSpec nvlink;
  PcieSpec pcie;
  NicSpec nic;
  FabricSpec fabric;
  NcclSpec nccl;

  int gpus() const { return nodes * gpus_per_node; }
};

// Names of the built-in clusters: "dgx-a100, dgx-h100, dgx-h200".
std::string builtin_cluster_names();

// Loads a built-in cluster by name or a cluster YAML file by path, sizes it to `nodes` (> 0; 0 keeps the
// file's `nodes`), applies each "path.to.key=value" override of `set_overrides` to the YAML before it is
// read, and validates everything. Throws InputError naming "FILE:LINE:COLUMN: field" (or "--set key",
// "--cluster", "--nodes") and what was expected.
ClusterSpec load_cluster(const std::string& name_or_path, int nodes, const std::vector<std::string>& set_overrides);

} // namespace gputwin::topo
