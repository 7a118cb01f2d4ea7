#include "gputwin/sim/lone_transfer.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace gputwin::sim {

double nccl_link_bytes_per_s(const topo::ClusterSpec& spec, const topo::Link& link)
{
  switch (link.kind) {
  case topo::LinkKind::Nvlink: return link.bytes_per_s * spec.nccl.nvlink_efficiency;
  case topo::LinkKind::Pcie: return link.bytes_per_s * spec.nccl.pcie_efficiency;
  case topo::LinkKind::NicToFabric:
  case topo::LinkKind::Fabric: return link.bytes_per_s * spec.nccl.net_efficiency;
  }
  return link.bytes_per_s;
}

LoneRoute lone_route(const topo::ClusterGraph& graph, const std::vector<int>& route)
{
  LoneRoute lone;
  for (const int link : route) {
    const topo::Link& l = graph.links()[static_cast<size_t>(link)];
    lone.latency_s += l.latency_s;
    lone.bytes_per_s = std::min(lone.bytes_per_s, nccl_link_bytes_per_s(graph.spec(), l));
  }
  return lone;
}

namespace {

// Each link a work's flows touch, in the order first touched.
struct LinkUse {
  int link = 0;
  double bytes = 0;    // its flows' bytes, summed in flow order
  int flows = 0;       // its flows (a route through it twice counts twice)
  double seconds = 0;  // bytes over its NCCL bandwidth
  double active_s = 0; // the slowest of its flows
};

// Link -> index into a work's LinkUse list (-1: untouched), per thread and reset after each use: hash maps of a few
// links per flow cost more than the rest of link_load.
class LinkSlots {
public:
  explicit LinkSlots(size_t links)
  {
    if (slot_of_.size() < links)
      slot_of_.resize(links, -1);
  }
  ~LinkSlots()
  {
    for (const int link : touched_)
      slot_of_[static_cast<size_t>(link)] = -1;
  }
  LinkSlots(const LinkSlots&) = delete;
  LinkSlots& operator=(const LinkSlots&) = delete;
  // The use of `link` in `uses`, added when first seen.
  LinkUse& use(int link, std::vector<LinkUse>& uses)
  {
    int32_t& slot = slot_of_[static_cast<size_t>(link)];
    if (slot < 0) {
      slot = static_cast<int32_t>(uses.size());
      uses.push_back(LinkUse{link});
      touched_.push_back(link);
    }
    return uses[static_cast<size_t>(slot)];
  }

private:
  static thread_local std::vector<int32_t> slot_of_;
  std::vector<int> touched_;
};

thread_local std::vector<int32_t> LinkSlots::slot_of_;

} // namespace

LinkLoad link_load(const topo::ClusterGraph& graph, const CommWork& work)
{
  LinkSlots slots(graph.links().size());
  std::vector<LinkUse> uses;
  std::vector<std::vector<int>> routes;
  routes.reserve(work.flows.size());
  LinkLoad load;
  for (const Flow& f : work.flows) {
    routes.push_back(graph.route(f.src_gpu, f.dst_gpu));
    for (const int link : routes.back()) {
      LinkUse& use = slots.use(link, uses);
      use.bytes += f.bytes;
      ++use.flows;
    }
    load.route_latency_s = std::max(load.route_latency_s, graph.path_latency_s(routes.back()));
  }
  for (LinkUse& use : uses) {
    use.seconds = use.bytes / nccl_link_bytes_per_s(graph.spec(), graph.links()[static_cast<size_t>(use.link)]);
    load.busiest_s = std::max(load.busiest_s, use.seconds);
  }
  for (const std::vector<int>& route : routes) {
    double flow_s = 0;
    for (const int link : route)
      flow_s = std::max(flow_s, slots.use(link, uses).seconds);
    for (const int link : route) {
      LinkUse& use = slots.use(link, uses);
      use.active_s = std::max(use.active_s, flow_s);
    }
  }
  load.links.reserve(uses.size());
  for (const LinkUse& use : uses)
    load.links.push_back({use.link, use.bytes, use.flows, use.active_s});
  std::sort(load.links.begin(), load.links.end(),
            [](const LoadOnLink& a, const LoadOnLink& b) { return a.link < b.link; });
  load.latency_s = work.latency_s;
  return load;
}

double contention_free_duration_s(const topo::ClusterGraph& graph, const CommWork& work)
{
  return link_load(graph, work).duration_s();
}

} // namespace gputwin::sim
