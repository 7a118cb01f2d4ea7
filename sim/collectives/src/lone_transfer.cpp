#include "gputwin/sim/lone_transfer.hpp"

#include <algorithm>
#include <unordered_map>

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

LinkLoad link_load(const topo::ClusterGraph& graph, const CommWork& work)
{
  std::unordered_map<int, double> bytes_on_link;
  std::vector<std::vector<int>> routes;
  routes.reserve(work.flows.size());
  LinkLoad load;
  for (const Flow& f : work.flows) {
    routes.push_back(graph.route(f.src_gpu, f.dst_gpu));
    for (const int link : routes.back())
      bytes_on_link[link] += f.bytes;
    load.route_latency_s = std::max(load.route_latency_s, graph.path_latency_s(routes.back()));
  }
  std::unordered_map<int, double> seconds_on_link; // a link's bytes over its bandwidth
  for (const auto& [link, bytes] : bytes_on_link) {
    const double s = bytes / nccl_link_bytes_per_s(graph.spec(), graph.links()[static_cast<size_t>(link)]);
    seconds_on_link[link] = s;
    load.busiest_s = std::max(load.busiest_s, s);
  }
  std::unordered_map<int, double> active_s;
  std::unordered_map<int, int> nflows;
  for (const std::vector<int>& route : routes)
    for (const int link : route)
      ++nflows[link];
  for (const std::vector<int>& route : routes) {
    double flow_s = 0;
    for (const int link : route)
      flow_s = std::max(flow_s, seconds_on_link[link]);
    for (const int link : route)
      active_s[link] = std::max(active_s[link], flow_s);
  }
  for (const auto& [link, bytes] : bytes_on_link)
    load.links.push_back({link, bytes, nflows[link], active_s[link]});
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
