#include "gputwin/topologies/fat_tree.hpp"

#include "cluster_spec_check.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gputwin::topo {

namespace {

int64_t ceil_div(int64_t a, int64_t b)
{
  return (a + b - 1) / b;
}

// floor(radix * share), within 0 .. radix. The epsilon keeps exact ratios exact (40 * 3 / 4 = 30, not 29.999...).
int port_share(int radix, double share)
{
  const double ports = std::floor(static_cast<double>(radix) * share + 1e-9);
  return static_cast<int>(std::clamp(ports, 0.0, static_cast<double>(radix)));
}

// Leaves the configured levels can hold: 1, radix, or radix pods (a core's ports) of d2 leaves.
int64_t max_leaves(const FabricSpec& fabric)
{
  const int64_t radix = fabric.switch_radix;
  switch (fabric.levels) {
  case 1: return 1;
  case 2: return radix;
  default: return radix * aggregation_down_ports(fabric);
  }
}

} // namespace

int leaf_down_ports(const FabricSpec& fabric)
{
  const double o = fabric.oversubscription;
  return port_share(fabric.switch_radix, o / (1 + o));
}

int aggregation_down_ports(const FabricSpec& fabric)
{
  const double o = fabric.spine_oversubscription;
  return port_share(fabric.switch_radix, o / (1 + o));
}

int aggregation_up_ports(const FabricSpec& fabric)
{
  return port_share(fabric.switch_radix, 1 / (1 + fabric.spine_oversubscription));
}

int64_t max_fabric_nodes(const ClusterSpec& spec)
{
  const int64_t nics = spec.nic.count;
  if (nics <= 0)
    return std::numeric_limits<int64_t>::max(); // nothing joins the nodes; the graph reports it as disconnected
  const int64_t d = leaf_down_ports(spec.fabric);
  const int64_t leaves = max_leaves(spec.fabric);
  const int64_t nodes = spec.fabric.rail_optimized ? d * (leaves / nics) : leaves * d / nics;
  return std::max<int64_t>(1, nodes);
}

FatTreeShape fat_tree_shape(const ClusterSpec& spec)
{
  require_consistent(spec);
  const FabricSpec& fabric = spec.fabric;
  FatTreeShape shape;
  shape.nodes = spec.nodes;
  shape.nics_per_node = spec.nic.count;
  shape.rail_optimized = fabric.rail_optimized;
  shape.leaf_down_ports = leaf_down_ports(fabric);
  shape.leaf_up_ports = fabric.switch_radix - shape.leaf_down_ports;
  if (spec.nodes <= 1 || spec.nic.count <= 0)
    return shape; // nothing to join, or nothing to join it with
  const int64_t d = shape.leaf_down_ports;
  const int64_t u = shape.leaf_up_ports;
  if (fabric.rail_optimized) {
    shape.leaves_per_rail = static_cast<int>(ceil_div(spec.nodes, d));
    shape.leaves = shape.leaves_per_rail * spec.nic.count;
  } else {
    shape.leaves = static_cast<int>(ceil_div(int64_t{spec.nodes} * spec.nic.count, d));
  }
  if (shape.leaves == 1) {
    shape.levels = 1;
  } else if (shape.leaves <= fabric.switch_radix) {
    shape.levels = 2;
    shape.spines = static_cast<int>(u);
  } else {
    shape.levels = 3;
    shape.leaves_per_pod = aggregation_down_ports(fabric);
    shape.cores_per_group = aggregation_up_ports(fabric);
    shape.pods = static_cast<int>(ceil_div(shape.leaves, shape.leaves_per_pod));
    shape.spines = static_cast<int>(shape.pods * u);
    shape.cores = static_cast<int>(u * shape.cores_per_group);
  }
  return shape;
}

int FatTreeShape::leaf_of_nic(int node, int nic) const
{
  if (rail_optimized)
    return (node / leaf_down_ports) * nics_per_node + nic;
  return (node * nics_per_node + nic) / leaf_down_ports;
}

int FatTreeShape::down_port_of_nic(int node, int nic) const
{
  if (rail_optimized)
    return node % leaf_down_ports;
  return (node * nics_per_node + nic) % leaf_down_ports;
}

std::vector<int> FatTreeShape::switches_per_level() const
{
  std::vector<int> counts;
  if (levels >= 1)
    counts.push_back(leaves);
  if (levels >= 2)
    counts.push_back(spines);
  if (levels >= 3)
    counts.push_back(cores);
  return counts;
}

} // namespace gputwin::topo
