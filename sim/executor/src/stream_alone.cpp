#include "gputwin/sim/stream_alone.hpp"

#include "gputwin/sim/dag_executor.hpp" // nccl_link_bytes_per_s: the platform's link bandwidth
#include "gputwin/sim/flow_set.hpp"
#include "gputwin/sim/link_components.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace gputwin::sim {

namespace {

constexpr double never = std::numeric_limits<double>::infinity();

struct Route {
  std::vector<int> links;
  double latency_s = 0; // the links' latencies, paid before the transfer
};

} // namespace

std::vector<PlanTiming> time_stream_alone(const topo::ClusterGraph& graph,
                                          const std::vector<const CollectivePlan*>& stream, StreamAloneStats* stats)
{
  const size_t link_count = graph.links().size();
  std::vector<double> capacity(link_count);
  for (size_t l = 0; l < link_count; ++l)
    capacity[l] = nccl_link_bytes_per_s(graph.spec(), graph.links()[l]);
  std::unordered_map<uint64_t, Route> routes;
  std::vector<char> link_used(link_count, 0);
  size_t links_used = 0;
  const auto route = [&](int src, int dst) -> const Route& {
    if (src == dst)
      throw std::invalid_argument("time_stream_alone: a route from GPU " + std::to_string(src) + " to itself");
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) | static_cast<uint32_t>(dst);
    auto found = routes.find(key);
    if (found != routes.end())
      return found->second;
    Route r;
    r.links = graph.route(src, dst);
    r.latency_s = graph.path_latency_s(r.links);
    for (const int id : r.links) {
      if (!link_used[static_cast<size_t>(id)]) {
        link_used[static_cast<size_t>(id)] = 1;
        ++links_used;
      }
    }
    return routes.emplace(key, std::move(r)).first->second;
  };

  std::vector<std::unique_ptr<FlowSet>> sets; // reused from plan to plan
  std::vector<int32_t> link_index;             // shared by the sets: a plan's sets hold disjoint links
  std::vector<int32_t> first_on_link(link_count, -1);
  std::vector<PlanTiming> timings;
  timings.reserve(stream.size());
  double clock_s = 0;
  for (const CollectivePlan* plan : stream) {
    const std::vector<Flow>& flows = plan->flows;
    const size_t n = flows.size();
    const double t0 = clock_s;
    std::vector<const Route*> flow_routes(n);
    for (size_t i = 0; i < n; ++i)
      flow_routes[i] = &route(flows[i].src_gpu, flows[i].dst_gpu);
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return flow_routes[a]->latency_s < flow_routes[b]->latency_s; });
    // Components: flows that share a link, one flow set each.
    const std::vector<int32_t> component = link_components(
        n, [&](size_t i) -> const std::vector<int>& { return flow_routes[i]->links; }, first_on_link);
    std::vector<int32_t> set_of(n, -1); // by component
    size_t used_sets = 0;
    const auto set_for = [&](size_t flow) -> FlowSet& {
      int32_t& s = set_of[static_cast<size_t>(component[flow])];
      if (s < 0) {
        if (used_sets == sets.size())
          sets.push_back(std::make_unique<FlowSet>(capacity, link_index));
        sets[used_sets]->clear();
        s = static_cast<int32_t>(used_sets++);
      }
      return *sets[static_cast<size_t>(s)];
    };

    double arrival_s = t0;
    const auto on_end = [&](int32_t, double end_s) { arrival_s = std::max(arrival_s, end_s); };
    const auto on_link_free = [](int) {};
    size_t next = 0;
    double now_s = t0;
    for (;;) {
      for (; next < n && t0 + flow_routes[order[next]]->latency_s <= now_s; ++next) {
        const size_t i = order[next];
        FlowSet& set = set_for(i);
        set.advance(now_s, on_end, on_link_free);
        set.add(flow_routes[i]->links.data(), flow_routes[i]->links.size(), std::ceil(std::max(flows[i].bytes, 0.0)),
                now_s);
      }
      double wake_s = next < n ? t0 + flow_routes[order[next]]->latency_s : never;
      for (size_t s = 0; s < used_sets; ++s) {
        FlowSet& set = *sets[s];
        set.advance(now_s, on_end, on_link_free);
        if (!set.active_flows().empty())
          wake_s = std::min(wake_s, set.next_end_s());
      }
      if (wake_s == never)
        break;
      now_s = std::max(now_s, wake_s);
    }
    const double end_s = std::max(t0, arrival_s) + plan->choice.latency_s;
    timings.push_back({t0, end_s});
    clock_s = end_s;
  }
  if (stats) {
    stats->links = links_used;
    stats->routes = routes.size();
  }
  return timings;
}

} // namespace gputwin::sim
