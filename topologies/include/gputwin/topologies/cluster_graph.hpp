#pragma once
// The cluster as a graph (Boost.Graph inside): GPUs, NVSwitches, PCIe switches, NICs and fabric switches as
// vertices; every physical full-duplex link as two directed links. Routing between any two GPUs returns the
// directed links a transfer crosses, so the simulator's platform and the graph can never disagree.

#include "gputwin/topologies/cluster_spec.hpp"
#include "gputwin/topologies/fat_tree.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gputwin::topo {

enum class VertexKind { Gpu, NvSwitch, PcieSwitch, Nic, FabricSwitch };
enum class LinkKind { Nvlink, Pcie, NicToFabric, Fabric };

struct Vertex {
  VertexKind kind;
  int node = -1;    // owning node; -1 for fabric switches
  int index = 0;    // local index within the node (GPU, NIC, PCIe switch) or within the fabric level
  int level = 0;    // fabric level (1 = leaf) for fabric switches; 0 otherwise
  std::string name; // unique: "n3.gpu5", "n3.nvswitch" ("nvl1.nvswitch": a domain of nodes), "n3.pcie2", "n3.nic5",
                    // "leaf.r5.0", "spine.7", "core.12" (3-level trees: "leaf.r5.0", "agg.p1.3" = pod 1's aggregation
                    // switch 3, "core.12"; not rail-optimized: "leaf.4")
};

// One direction of a physical link.
struct Link {
  int from = 0, to = 0; // vertex ids
  LinkKind kind;
  double bytes_per_s = 0; // line rate of this direction
  double latency_s = 0;
  std::string name; // "n3.gpu5->n3.nvswitch"
};

struct TopologySummary {
  int nodes = 0;
  int gpus = 0;
  int nvlink_domain_gpus = 0; // GPUs of one NVLink domain (spec.domain_gpus())
  int nvlink_domains = 0;     // domains the nodes fill (the last one partly when they are not whole domains)
  int nvswitch_chips = 0;     // physical chips over all domains (spec.nvlink.switch_chips x domains)
  int pcie_switches = 0;
  int nics = 0;
  std::vector<int> fabric_switches_per_level; // [0] = leaves, [1] = spines, [2] = cores
  int fabric_switches = 0;
  int physical_links = 0;                   // full-duplex links (each counted once)
  double nvlink_bytes_per_s_per_gpu = 0;    // per direction
  double injection_bytes_per_s_per_gpu = 0; // inter-node: node NIC bandwidth / GPUs per node, per direction
  double bisection_bytes_per_s = 0;         // inter-node, per direction, across the worst half/half node cut
};

class ClusterGraph {
public:
  // Builds and validates the graph: connected, every GPU reaches every other, positive bandwidths; then applies
  // spec.faults (fabric_faults.cpp): a degraded cable's two directions get factor x their bandwidth, a failed cable
  // or NIC carries nothing and route() avoids it. Throws InputError naming the cluster on a disconnected or
  // invalid topology, or the flag (--degrade-link, --fail-link, --fail-nic) and the name that names no link/NIC.
  explicit ClusterGraph(ClusterSpec spec);
  ~ClusterGraph();
  ClusterGraph(ClusterGraph&&) noexcept;
  ClusterGraph& operator=(ClusterGraph&&) noexcept;

  const ClusterSpec& spec() const { return spec_; }
  const std::vector<Vertex>& vertices() const { return vertices_; }
  // Directed links; ids 2k and 2k + 1 are the two directions of one physical link, 2k the one away from the GPUs
  // (GPU -> switch, PCIe switch -> NIC, NIC -> leaf, leaf -> spine -> core).
  const std::vector<Link>& links() const { return links_; } // directed
  int gpu_count() const { return spec_.gpus(); }
  int gpu_vertex(int gpu) const; // gpu = node * gpus_per_node + local index
  int node_of_gpu(int gpu) const { return gpu / spec_.gpus_per_node; }

  // The directed link ids a transfer from `src_gpu` to `dst_gpu` crosses, in order. Same NVLink domain (the node,
  // or several nodes for a rack-scale domain): NVLink up, NVLink down. Different domains: rail-aligned as NCCL does it
  // -- the NIC of the destination GPU's rail (its local index's NIC) on both sides; if the source GPU is not on that
  // NIC's PCIe switch, the data first crosses NVLink to a GPU that is (PXN); then PCIe up, NIC->leaf, up-down through
  // the fat tree (deterministic destination-based choice of uplinks), leaf->NIC, PCIe down. REQUIRES src != dst. With
  // failed links (spec.faults) the route avoids them where the graph has another path: inside a node PCIe through a
  // shared PCIe switch; across nodes another uplink (spine, core) of the same rail, else the nearest other rail whose
  // NICs work on both nodes (its PCIe switch first); throws InputError when no such path exists (the failure
  // disconnects the two GPUs).
  std::vector<int> route(int src_gpu, int dst_gpu) const;

  // The latency a message pays along `links` (directed link ids, e.g. a route()): the sum of theirs.
  double path_latency_s(const std::vector<int>& links) const;

  // True when directed link `link` is failed (--fail-link, --fail-nic): nothing crosses it.
  bool link_failed(int link) const { return !failed_.empty() && failed_[static_cast<size_t>(link)] != 0; }
  // True when a degraded or failed cable (--degrade-link, --fail-link, --fail-nic) ends at a GPU, switch or NIC of
  // node `node`: that node's traffic no longer times like a healthy node's (a folded simulation must run it).
  bool node_faulted(int node) const
  {
    return !faulted_nodes_.empty() && faulted_nodes_[static_cast<size_t>(node)] != 0;
  }

  TopologySummary summary() const;

  // Graphviz text: one node per vertex, one undirected edge per physical link with its bandwidth.
  std::string dot() const;

  // The fat tree joining the nodes, one plane of it (levels 0 for a single node).
  const FatTreeShape& fabric() const { return fabric_; }

  // The fewest links from vertex `from_vertex` to each vertex (-1 where unreachable): a breadth-first search
  // of the Boost graph, independent of route().
  std::vector<int> hop_counts(int from_vertex) const;

private:
  struct BoostGraph;
  struct Wiring; // link ids by endpoint, so route() is table look-ups

  int add_vertex(VertexKind kind, int node, int index, int level, std::string name);
  // Adds the physical link a <-> b as links a->b (the returned id, even) and b->a (id + 1).
  int add_link(int a, int b, LinkKind kind, double bytes_per_s, double latency_s);
  void build_nodes();
  void build_fabric();
  void check_links() const;
  void apply_faults();
  // The inter-node path from src to dst through NIC `rail` on both nodes (see route()). With `avoid` set, uplinks
  // are chosen among those not failed; returns false when the path cannot avoid a failed link.
  bool inter_node_path(int src_gpu, int dst_gpu, int rail, bool avoid, std::vector<int>& path) const;
  std::vector<int> route_around_faults(int src_gpu, int dst_gpu) const;

  ClusterSpec spec_;
  std::vector<Vertex> vertices_;
  std::vector<Link> links_;
  std::vector<int> gpu_vertices_;
  std::unique_ptr<BoostGraph> graph_;
  FatTreeShape fabric_; // the physical tree, one plane
  // The tree the graph is built and routed on: the planes' identical trees are one, at P times a plane's switch-
  // to-switch bandwidth; with adaptive routing each switch tier a route sprays over is one vertex per pod (the leaf's
  // uplinks one link of their summed bandwidth), so max-min sharing sees the even spreading (graph_shape()).
  FatTreeShape routed_;
  std::unique_ptr<Wiring> wiring_;
  std::vector<char> failed_;        // per directed link, when some link is failed; empty otherwise
  std::vector<char> faulted_nodes_; // per node, when some cable is degraded or failed; empty otherwise
};

} // namespace gputwin::topo
