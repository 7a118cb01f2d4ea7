// Degraded and failed links and NICs (ClusterSpec::faults) applied to the cluster graph, and the routing around
// failed ones (sim/README.md, "Degraded and failed fabric").
#include "gputwin/topologies/cluster_graph.hpp"

#include "cluster_wiring.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/json_writer.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace gputwin::topo {

bool FabricFaults::nic_failed(int node, int nic) const
{
  return std::find(failed_nics.begin(), failed_nics.end(), std::make_pair(node, nic)) != failed_nics.end();
}

void ClusterGraph::apply_faults()
{
  FabricFaults& faults = spec_.faults;
  if (faults.empty())
    return;
  std::unordered_map<std::string, int> by_name;
  for (size_t id = 0; id < links_.size(); ++id)
    by_name.emplace(links_[id].name, static_cast<int>(id));
  // Examples of each kind of name, for the error message.
  std::string examples;
  for (const LinkKind kind : {LinkKind::Nvlink, LinkKind::NicToFabric, LinkKind::Fabric}) {
    const auto it = std::find_if(links_.begin(), links_.end(), [&](const Link& l) { return l.kind == kind; });
    if (it != links_.end())
      examples += (examples.empty() ? "" : ", ") + it->name;
  }
  const auto find = [&](const char* flag, const std::string& name) {
    const auto it = by_name.find(name);
    if (it == by_name.end())
      throw InputError(std::string(flag) + ": no link '" + name + "' in cluster '" + spec_.name + "' of " +
                       std::to_string(spec_.nodes) + " node(s) (expected a directed link name such as " + examples +
                       "; either direction names the cable)");
    return it->second & ~1; // the cable's first direction
  };
  // Each cable at most once over --degrade-link and --fail-link (either direction names it): the flag that named it.
  std::unordered_map<int, const char*> named_by;
  const auto name_once = [&](const char* flag, int cable) {
    const auto [it, first] = named_by.emplace(cable, flag);
    if (first)
      return;
    const Link& l = links_[static_cast<size_t>(cable)];
    const std::string what = std::string(flag) + ": cable " + vertices_[static_cast<size_t>(l.from)].name + "<->" +
                             vertices_[static_cast<size_t>(l.to)].name;
    throw InputError(what +
                     (it->second == std::string(flag) ? " is given twice" : " is also in " + std::string(it->second)) +
                     " (expected each cable at most once across --degrade-link and --fail-link)");
  };
  for (const auto& [name, factor] : faults.degraded_links) {
    const int cable = find("--degrade-link", name);
    if (!(factor > 0) || !std::isfinite(factor))
      throw InputError("--degrade-link: " + name + ": expected a factor > 0, got " + json_number(factor));
    name_once("--degrade-link", cable);
    links_[static_cast<size_t>(cable)].bytes_per_s *= factor;
    links_[static_cast<size_t>(cable) + 1].bytes_per_s *= factor;
  }
  std::vector<char> failed(links_.size(), 0);
  const auto fail = [&](int cable) { failed[static_cast<size_t>(cable)] = failed[static_cast<size_t>(cable) + 1] = 1; };
  for (const std::string& name : faults.failed_links) {
    const int cable = find("--fail-link", name);
    name_once("--fail-link", cable);
    fail(cable);
  }
  const Wiring& w = *wiring_;
  const int nics = spec_.nic.count;
  for (auto it = faults.failed_nics.begin(); it != faults.failed_nics.end(); ++it) {
    const auto [node, nic] = *it;
    if (std::find(faults.failed_nics.begin(), it, *it) != it)
      throw InputError("--fail-nic: NIC " + std::to_string(node) + ":" + std::to_string(nic) +
                       " is given twice (expected each NIC at most once)");
    if (node < 0 || node >= spec_.nodes)
      throw InputError("--fail-nic: node " + std::to_string(node) + " is not in cluster '" + spec_.name +
                       "' (expected 0.." + std::to_string(spec_.nodes - 1) + ")");
    if (nic < 0 || nic >= nics)
      throw InputError("--fail-nic: NIC " + std::to_string(nic) + ": a node of '" + spec_.name + "' has " +
                       std::to_string(nics) + " NIC(s) (expected 0.." + std::to_string(nics - 1) + ")");
    const size_t index = static_cast<size_t>(node * nics + nic);
    fail(w.nic_pcie[index]);
    if (!w.nic_leaf.empty())
      fail(w.nic_leaf[index]);
  }
  // A NIC whose cable failed is a failed NIC: the collective planner (which sees the spec) leaves its rail out.
  for (int index = 0; index < spec_.nodes * nics; ++index) {
    const bool cut = failed[static_cast<size_t>(w.nic_pcie[static_cast<size_t>(index)])] ||
                     (!w.nic_leaf.empty() && failed[static_cast<size_t>(w.nic_leaf[static_cast<size_t>(index)])]);
    if (cut && !faults.nic_failed(index / nics, index % nics))
      faults.failed_nics.emplace_back(index / nics, index % nics);
  }
  faulted_nodes_.assign(static_cast<size_t>(spec_.nodes), 0);
  for (size_t id = 0; id < links_.size(); ++id)
    if (failed[id] || named_by.count(static_cast<int>(id & ~size_t{1})))
      for (const int vertex : {links_[id].from, links_[id].to})
        if (const int node = vertices_[static_cast<size_t>(vertex)].node; node >= 0)
          faulted_nodes_[static_cast<size_t>(node)] = 1;
  if (std::find(failed.begin(), failed.end(), 1) != failed.end())
    failed_ = std::move(failed);
}

std::vector<int> ClusterGraph::route_around_faults(int src_gpu, int dst_gpu) const
{
  const Wiring& w = *wiring_;
  const int gpus = spec_.gpus_per_node;
  const auto at = [](const std::vector<int>& table, int index) { return table[static_cast<size_t>(index)]; };
  const auto clear = [&](const std::vector<int>& path) {
    return std::none_of(path.begin(), path.end(), [&](int link) { return link_failed(link); });
  };
  std::vector<int> path;
  const bool same_node = src_gpu / gpus == dst_gpu / gpus;
  if (spec_.same_nvlink_domain(src_gpu, dst_gpu)) {
    path = {at(w.gpu_nvlink, src_gpu), reverse_link(at(w.gpu_nvlink, dst_gpu))};
    if (clear(path))
      return path;
    if (same_node && at(w.pcie_of_local_gpu, src_gpu % gpus) == at(w.pcie_of_local_gpu, dst_gpu % gpus)) {
      path = {at(w.gpu_pcie, src_gpu), reverse_link(at(w.gpu_pcie, dst_gpu))}; // through the PCIe switch they share
      if (clear(path))
        return path;
    }
  }
  if (!same_node) { // another domain, or a failed NVLink inside a domain of several nodes: the network
    // The destination's rail, then the other NICs of its PCIe switch, then the rest, each in index order after it.
    const int rail = at(w.rail_of_local_gpu, dst_gpu % gpus);
    const int nics = spec_.nic.count;
    std::vector<int> rails{rail};
    for (const bool same_switch : {true, false})
      for (int k = 1; k < nics; ++k) {
        const int r = (rail + k) % nics;
        if ((at(w.pcie_of_nic, r) == at(w.pcie_of_nic, rail)) == same_switch)
          rails.push_back(r);
      }
    for (const int r : rails)
      if (inter_node_path(src_gpu, dst_gpu, r, true, path))
        return path;
  }
  std::string failures;
  for (const std::string& name : spec_.faults.failed_links)
    failures += (failures.empty() ? "" : ", ") + name;
  for (const auto& [node, nic] : spec_.faults.failed_nics)
    failures += (failures.empty() ? "NIC " : ", NIC ") + std::to_string(node) + ":" + std::to_string(nic);
  throw InputError(std::string(spec_.faults.failed_links.empty() ? "--fail-nic" : "--fail-link") +
                   ": the failure disconnects the job: no path from " +
                   vertices_[static_cast<size_t>(gpu_vertex(src_gpu))].name + " to " +
                   vertices_[static_cast<size_t>(gpu_vertex(dst_gpu))].name + " avoids the failed links (" + failures +
                   ")");
}

} // namespace gputwin::topo
