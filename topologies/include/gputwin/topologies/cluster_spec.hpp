#pragma once
// A GPU cluster as described in its YAML file (topologies/clusters/*.yaml): GPU kind, node internals,
// NICs with their rail mapping, the inter-node fat tree, and how NCCL performs on these links.
// SI units throughout: bytes, bytes per second, seconds, FLOP/s.

#include "gputwin/common/gpu_generation.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gputwin::topo {

// The family of a GPU kind, lower case: "a100" for "a100-sxm4-80gb", "cpu" for "cpu".
std::string gpu_family(const std::string& kind);

struct GpuSpec {
  std::string kind;           // "a100-sxm4-80gb": the part, as reports and compute-model files name it
  double peak_bf16_flops = 0; // dense tensor-core peak, FLOP/s
  int64_t hbm_bytes = 0;
  double hbm_bytes_per_s = 0;
  double peak_fp8_flops = 0; // dense FP8 tensor-core peak, FLOP/s; 0 = no FP8 tensor cores (A100)
  // What the built-in compute model and NCCL's tuning go by (gpu.generation). The new fields come last: brace
  // initializers of the fields above stay valid.
  GpuGeneration generation = GpuGeneration::Ampere;
  double peak_fp4_flops = 0; // dense NVFP4 tensor-core peak, FLOP/s; 0 = no FP4 tensor cores (before Blackwell)
};

// GPU <-> GPU inside an NVLink domain through NVSwitch: each GPU has one logical full-duplex link to the domain's
// switch. The domain is the node (DGX) or a whole number of nodes (GB200 NVL72: 18 trays of 4 GPUs).
struct NvlinkSpec {
  double bytes_per_s = 0; // per GPU, per direction (line rate)
  double latency_s = 0;   // one GPU -> switch hop
  int switch_chips = 0;   // physical NVSwitch chips per domain (the graph keeps one logical crossbar per domain)
  // GPUs sharing one NVLink switch domain (node.nvlink.domain_gpus), a multiple of the node's GPUs; 0: the node.
  // The new field comes last: brace initializers of the fields above stay valid.
  int domain_gpus = 0;
  // node.nvlink.segments (rack-scale domains): a job gets its trays in equal segments, one per domain, of the
  // greatest divisor of its tray count that fits a domain (SLURM --segment as NVIDIA's launcher sets it for GB200 /
  // GB300: llmb-run job_launcher.py _compute_segment_size, "for powers of 2 this is min(num_nodes, 16)"). The job's
  // domains are then those segments (load_cluster: domain_gpus = segment x GPUs per tray; a rack's other trays
  // carry none of its traffic); false: trays fill domains in order, the last one partly.
  bool segments = false;
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
  // Aggregation (level 2) down:up port ratio of a 3-level tree (1 = non-blocking): pods of
  // floor(radix * o / (1 + o)) leaves, the rest of each aggregation switch's ports up to the cores. 2 levels: unused.
  double spine_oversubscription = 1;
  bool rail_optimized = true;  // leaf switches per rail (NIC n of every node on rail n's leaves)
  double link_bytes_per_s = 0; // switch-to-switch links, per direction
  double switch_latency_s = 0; // per switch a route crosses: all of it on each switch-to-switch link, half on each
                               // NIC-leaf link (one per switch: a route through one leaf pays one)
  // Planes (fabric.planes): P identical fat trees, each NIC with one port of bandwidth / P on every plane (a
  // ConnectX-8's two 400G planes), switch_radix and link_bytes_per_s being one plane's. NCCL merges a NIC's ports
  // into one device and cuts every request evenly over them, so each transfer is split evenly over the planes.
  int planes = 1;
  // Adaptive routing (fabric.adaptive_routing, Spectrum-X RoCE): the switches spray each flow's packets over every
  // equal-cost uplink instead of the destination's static (D-mod-K) uplink.
  bool adaptive_routing = false;
};

// What one NCCL protocol (LL, LL128 or Simple) costs on this cluster, beyond the bytes on the links.
struct NcclProtocolSpec {
  double base_latency_s = 0;         // once per call (pipeline start and drain of the protocol)
  double nvlink_step_s = 0;          // per algorithm step between two GPUs of a node
  double net_step_s = 0;             // per algorithm step between two nodes
  double channel_bytes_per_s = 1e12; // the most one channel (one thread block) moves, payload bytes per second
};

// How NCCL performs on these links (calibration, each value with its source in the YAML): the fraction of
// line rate its Simple protocol reaches, per link kind; the channels it opens; the host's and the kernel's
// fixed cost per call; and each protocol's latencies and per-channel bandwidth (sim/README.md, "Collectives").
struct NcclSpec {
  double nvlink_efficiency = 1;
  double pcie_efficiency = 1;
  double net_efficiency = 1;        // NIC and fabric links
  // Defaults (used when a file leaves a field out): the A100 figures `gputwin calibrate --nccl-tests` fitted to
  // Echo's logs, as topologies/clusters/nd-a100-v4.yaml states them (a test holds the two equal). They are NCCL's
  // software and the A100's costs, not the fabric's, so every cluster without its own fit (dgx-a100, and for want
  // of a measurement dgx-h100/h200) takes them; link efficiencies stay per cluster.
  int channels_intra_node = 24;            // NCCL's collective channels inside one node (DGX A100: 24)
  int channels_inter_node = 16;            // ... for a communicator spanning nodes (8 NICs: 16)
  double host_call_s = 0.317571e-6;        // host time to issue one call, whatever the GPUs
  double host_launch_s_per_gpu = 3.85e-6;  // host time per GPU one thread launches the call on
  double kernel_s = 3.91016e-6;            // GPU-side fixed cost of one call (kernel start, final synchronisation)
  // GPU-side fixed cost of every channel (thread block) a call runs on: each channel fetches its work and
  // synchronises with its peers on its own, so a call on more channels pays more. NCCL spreads small messages
  // over channels in proportion to their size (enqueue.cc), so this is what makes small-message time grow with
  // size.
  double channel_s = 1.52691e-6;
  double channel_net_step_s = 2.03638e-6; // ... and per channel per algorithm step that crosses the network (proxy)
  bool tree_correction = true;            // trees reach only NCCL's corrected bandwidth at medium sizes (tuning.cc)
  // Fixed cost of one Transformer Engine userbuffers transfer (`--tp-comm-overlap`: a ring-exchange step, a chunk
  // of the pipelined reduce-scatter): a copy-engine put over NVLink into a pre-registered peer buffer plus its flag
  // write, no NCCL kernel or protocol. 4 us: cudaMemcpyAsync puts over NVLink4 between two H100s measure 3.55 us
  // (1 B) to 3.98 us (64 KiB) per call (meta-pytorch/torchcomms pull request 2195, NVLink transport benchmark).
  // Cluster file: nccl.userbuffers_latency_us (optional). sim/collectives/userbuffers_cost.hpp.
  double userbuffers_latency_s = 4e-6;
  // NCCL_NVLS_ENABLE: NVLink SHARP where the GPUs and NVSwitches have it (Hopper and later with NVSwitch), as NCCL
  // enables it by default since 2.17. Cluster file: nccl.nvls (optional); `--set nccl.nvls=false` turns it off.
  bool nvls = true;
  // NCCL_COLLNET_ENABLE: SHARP reductions in the InfiniBand switches (NCCL's CollNet, with NVIDIA's SHARP plugin and
  // SHARP-capable Quantum switches); off, as in NCCL, unless the cluster file or `--set nccl.collnet=true` says so.
  bool collnet = false;
  NcclProtocolSpec ll{1.7039e-6, 0.373934e-6, 7.54288e-6, 3.15924e9};
  NcclProtocolSpec ll128{22.2707e-6, 0.0946237e-6, 1.28754e-6, 7.52941e9};
  NcclProtocolSpec simple{11.6671e-6, 1.81554e-6, 10.5832e-6, 30e9};
};

// Faults on top of the cluster file (`--degrade-link`, `--fail-link`, `--fail-nic`; cluster_flags.hpp), applied by
// ClusterGraph: a named link is one direction of a cable ("n0.nic0->leaf.r0.0") and stands for the whole cable.
struct FabricFaults {
  std::vector<std::pair<std::string, double>> degraded_links; // (link name, factor > 0 on its bandwidth)
  std::vector<std::string> failed_links;                      // cables that carry nothing
  std::vector<std::pair<int, int>> failed_nics;               // (node, NIC): the NIC and its cables
  bool empty() const { return degraded_links.empty() && failed_links.empty() && failed_nics.empty(); }
  // True when NIC `nic` of `node` is failed (ClusterGraph adds the NICs whose cables --fail-link names).
  bool nic_failed(int node, int nic) const;
};

struct ClusterSpec {
  std::string name;   // "dgx-a100"
  std::string source; // file it came from ("<built-in dgx-a100>" or a path)
  GpuSpec gpu;
  int nodes = 0;
  int gpus_per_node = 0;
  // > 0: the node's "GPUs" are threads of one process sharing this many CPU cores (localhost); 0: each GPU is
  // its own device. Optional in the file (node.host_cores); replay of a CPU trace takes the trace's count.
  int host_cores = 0;
  // Host seconds per issued op relative to the x86 hosts the framework profiles' per-op costs come from
  // (node.host_issue_scale, optional, default 1): a slower CPU issues every kernel, GEMM, collective and step later;
  // the GPU-side launch latency is unchanged. Grace (GB200/GB300 trays): 1.9 (cluster files).
  double host_issue_scale = 1.0;
  NvlinkSpec nvlink;
  PcieSpec pcie;
  NicSpec nic;
  FabricSpec fabric;
  NcclSpec nccl;
  FabricFaults faults; // none in a file; set by the cluster flags

  int gpus() const { return nodes * gpus_per_node; }
  // GPUs of one NVLink domain: nvlink.domain_gpus, or the node's when 0. GPUs g fill domains in order.
  int domain_gpus() const { return nvlink.domain_gpus > 0 ? nvlink.domain_gpus : gpus_per_node; }
  int nodes_per_domain() const { return domain_gpus() / gpus_per_node; }
  // The domain of GPU `gpu_id` (global id): transfers inside it go over NVLink, whatever node (tray) each GPU is on.
  int domain_of_gpu(int gpu_id) const { return gpu_id / domain_gpus(); }
  bool same_nvlink_domain(int gpu_a, int gpu_b) const { return domain_of_gpu(gpu_a) == domain_of_gpu(gpu_b); }
  // Domains the cluster's nodes fill, the last one partly when the nodes are not a whole number of domains.
  int nvlink_domains() const { return (gpus() + domain_gpus() - 1) / domain_gpus(); }
};

// Names of the built-in clusters: "dgx-a100, dgx-b200, dgx-h100, ...".
std::string builtin_cluster_names();

// Loads a built-in cluster by name or a cluster YAML file by path, sizes it to `nodes` (> 0; 0 keeps the
// file's `nodes`), applies each "path.to.key=value" override of `set_overrides` to the YAML before it is
// read, and validates everything. Throws InputError naming "FILE:LINE:COLUMN: field" (or "--set key",
// "--cluster", "--nodes") and what was expected.
ClusterSpec load_cluster(const std::string& name_or_path, int nodes, const std::vector<std::string>& set_overrides);

// A cluster as a user names it, before it is sized to a job: the built-in name or file, the node count if the
// user fixed one (0: as many as the job needs), the --set overrides and the faults.
struct ClusterRequest {
  std::string name_or_path = "dgx-a100";
  int nodes = 0;
  std::vector<std::string> set_overrides;
  FabricFaults faults;
};

// The requested cluster with `nodes` nodes (0: the request's, else the file's), its faults kept.
ClusterSpec load_cluster(const ClusterRequest& request, int nodes = 0);

} // namespace gputwin::topo
