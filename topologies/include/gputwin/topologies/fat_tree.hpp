#pragma once
// The inter-node fat tree gputwin builds for a cluster: how many switches on each level and which leaf each
// NIC is cabled to. Deterministic and computable by hand (topologies/README.md, "Fabric"):
//
//   leaf ports:  d = floor(radix * o / (1 + o)) down to NICs, u = radix - d up (o = oversubscription)
//   leaves:      rail-optimized: ceil(nodes / d) per rail, leaf (rail r, group j) = index j * nics + r, cabled
//                to NIC r of nodes j*d .. j*d+d-1; otherwise ceil(nodes * nics / d), NICs in node-major order
//   1 leaf:      1 level; leaves <= radix: 2 levels, u spines, every leaf linked once to every spine;
//   otherwise:   3 levels: pods of d2 consecutive leaves, u aggregation switches per pod (every leaf of
//                the pod linked once to each), u groups of u2 cores (aggregation switch g of every pod
//                linked once to every core of group g); at most radix pods. d2 = floor(radix * o2 / (1 + o2)),
//                u2 = floor(radix / (1 + o2)), o2 = the aggregation tier's oversubscription (radix/2 each at 1).

#include "gputwin/topologies/cluster_spec.hpp"

#include <cstdint>
#include <vector>

namespace gputwin::topo {

struct FatTreeShape {
  int levels = 0; // levels built: 0 (one node, no fabric), 1, 2 or 3
  int nodes = 0;
  int nics_per_node = 0;
  bool rail_optimized = true;
  int leaf_down_ports = 0; // d: leaf ports to NICs
  int leaf_up_ports = 0;   // u: leaf ports to level 2
  int leaves = 0;
  int leaves_per_rail = 0; // rail-optimized: ceil(nodes / d); 0 otherwise
  int leaves_per_pod = 0;  // 3 levels: d2, radix / 2 when the aggregation tier is non-blocking; 0 otherwise
  int cores_per_group = 0; // 3 levels: u2, each aggregation switch's uplinks (radix / 2 non-blocking); 0 otherwise
  int pods = 0;            // 3 levels: ceil(leaves / leaves_per_pod); 0 otherwise
  int spines = 0;          // level-2 switches: u spines (2 levels) or pods x u aggregation switches (3 levels)
  int cores = 0;           // 3 levels: u groups of u2 cores; 0 otherwise

  // The leaf (0-based, among the leaves) that NIC `nic` of `node` is cabled to. REQUIRES levels >= 1.
  int leaf_of_nic(int node, int nic) const;
  // The NIC's down port on its leaf (0 .. d-1): rail-optimized node mod d, otherwise (node·nics + nic) mod d.
  int down_port_of_nic(int node, int nic) const;
  // The destination index uplinks are chosen by (D-mod-K routing, as InfiniBand's fat-tree routing engines
  // assign up ports): leaf_of_nic · d + down_port_of_nic. Destinations on one leaf differ in it mod d, so d
  // destinations under a leaf reach it through d different spines, rail-optimized or not.
  int routing_index_of_nic(int node, int nic) const
  {
    return leaf_of_nic(node, nic) * leaf_down_ports + down_port_of_nic(node, nic);
  }
  // Switches on each level built, from the leaves up: {leaves}, {leaves, spines} or {leaves, aggs, cores}.
  std::vector<int> switches_per_level() const;
  int switches() const { return leaves + spines + cores; }
};

// d = floor(radix * o / (1 + o)): leaf ports facing NICs (radix / 2 when non-blocking).
int leaf_down_ports(const FabricSpec& fabric);
// d2 = floor(radix * o2 / (1 + o2)), o2 = fabric.spine_oversubscription: an aggregation switch's ports to the
// leaves of its pod (radix / 2 when non-blocking).
int aggregation_down_ports(const FabricSpec& fabric);
// u2 = floor(radix / (1 + o2)): an aggregation switch's ports to the cores (radix / 2 when non-blocking).
int aggregation_up_ports(const FabricSpec& fabric);

// The most nodes of `spec` (its NICs per node) that `spec.fabric.levels` levels of its switches can join;
// at least 1 (a single node needs no fabric); no limit without NICs (nothing joins the nodes: ClusterGraph
// reports them disconnected).
int64_t max_fabric_nodes(const ClusterSpec& spec);

// The fat tree for `spec.nodes` nodes (levels 0 for one node or no NICs). Throws InputError "cluster 'NAME':
// FIELD: ..." if `spec` is inconsistent, e.g. `fabric.levels` when the nodes do not fit its levels.
FatTreeShape fat_tree_shape(const ClusterSpec& spec);

} // namespace gputwin::topo
