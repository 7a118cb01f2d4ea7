#pragma once
// ClusterGraph's wiring tables (private to topologies/src): shared by the graph builder and router
// (cluster_graph.cpp) and the fault handling (fabric_faults.cpp).

#include "gputwin/topologies/cluster_graph.hpp"

#include <vector>

namespace gputwin::topo {

// Link ids by endpoint, each of the direction away from the GPUs (GPU -> switch, PCIe switch -> NIC,
// NIC -> leaf, level l -> level l + 1); the opposite direction is id + 1 (id ^ 1).
struct ClusterGraph::Wiring {
  std::vector<int> gpu_nvlink; // per GPU of the cluster: GPU -> NVSwitch
  std::vector<int> gpu_pcie;   // per GPU: GPU -> its PCIe switch
  std::vector<int> nic_pcie;   // per NIC of the cluster (node * nics + n): PCIe switch -> NIC
  std::vector<int> nic_leaf;   // per NIC: NIC -> leaf
  std::vector<int> leaf_of_nic;
  std::vector<int> leaf_up;           // leaf * u + k: leaf -> spine k (2 levels) or aggregation switch k of its pod (3)
  std::vector<int> agg_up;            // agg * (radix / 2) + c: aggregation switch -> core c of its group (3 levels)
  std::vector<int> rail_of_local_gpu; // the NIC whose rail-map list first names the local GPU
  std::vector<int> pcie_of_local_gpu;
  std::vector<int> pcie_of_nic; // the PCIe switch of the NIC's first served GPU
  std::vector<int> first_gpu_of_nic;
};

// The opposite direction of directed link `link` (see Wiring).
constexpr int reverse_link(int link)
{
  return link ^ 1;
}

} // namespace gputwin::topo
