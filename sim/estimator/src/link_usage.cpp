#include "gputwin/sim/link_usage.hpp"

#include "gputwin/sim/exact_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <stdexcept>

namespace gputwin::sim {

const std::vector<int>& RouteCache::operator()(int src, int dst)
{
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) | static_cast<uint32_t>(dst);
  auto found = routes_.find(key);
  if (found == routes_.end())
    found = routes_.emplace(key, graph_.route(src, dst)).first;
  return found->second;
}

std::vector<size_t> flows_by_start(const FlowLog& log)
{
  std::vector<size_t> order(log.flows.size());
  const bool sorted = std::is_sorted(log.flows.begin(), log.flows.end(),
                                     [](const FlowRecord& a, const FlowRecord& b) { return a.start_s < b.start_s; });
  if (sorted) {
    std::iota(order.begin(), order.end(), size_t{0});
    return order;
  }
  std::vector<std::pair<double, size_t>> keyed(log.flows.size());
  for (size_t i = 0; i < keyed.size(); ++i)
    keyed[i] = {log.flows[i].start_s, i};
  std::sort(keyed.begin(), keyed.end());
  for (size_t i = 0; i < keyed.size(); ++i)
    order[i] = keyed[i].second;
  return order;
}

LinkUsage link_usage(const topo::ClusterGraph& graph, const FlowLog& log, double from_s, double to_s)
{
  LinkUsage usage;
  // Transfers by start time, so each link's union of intervals is built in one pass: a running interval per link.
  // Clipping to the window keeps that order (the clipped start, max(start, from), does not decrease).
  struct Running {
    double start_s = 0, end_s = -1;
  };
  const size_t link_count = graph.links().size();
  std::vector<LinkTraffic> links(link_count);
  std::vector<Running> running(link_count);
  std::vector<char> touched(link_count, 0);
  RouteCache route(graph);
  const topo::ClusterSpec& spec = graph.spec();
  for (const size_t i : flows_by_start(log)) {
    const FlowRecord& f = log.flows[i];
    if (f.start_s >= to_s)
      break;
    const bool counted = f.start_s >= from_s; // a flow is the window's when it starts in it
    const double start_s = std::max(f.start_s, from_s), end_s = std::min(f.end_s, to_s);
    if (!counted && !(end_s > start_s))
      continue; // before the window
    if (counted) {
      ++usage.flows;
      usage.flow_bytes += f.bytes;
      if (!spec.same_nvlink_domain(f.src_gpu, f.dst_gpu))
        usage.inter_domain_bytes += f.bytes;
    }
    for (const int link : route(f.src_gpu, f.dst_gpu)) {
      const size_t l = static_cast<size_t>(link);
      LinkTraffic& use = links[l];
      touched[l] = 1;
      if (counted) {
        use.bytes += f.bytes;
        ++use.flows;
      }
      if (!(end_s > start_s))
        continue; // moved nothing over time (no bytes)
      Running& r = running[l];
      if (start_s > r.end_s) {
        if (r.end_s > r.start_s)
          use.busy_s += r.end_s - r.start_s;
        r = Running{start_s, end_s};
      } else {
        r.end_s = std::max(r.end_s, end_s);
      }
    }
  }
  for (size_t l = 0; l < link_count; ++l) {
    if (!touched[l])
      continue;
    LinkTraffic& use = links[l];
    const Running& r = running[l];
    if (r.end_s > r.start_s)
      use.busy_s += r.end_s - r.start_s;
    use.link = static_cast<int>(l);
    if (use.flows > 0 || use.busy_s > 0)
      usage.links.push_back(use);
  }
  return usage;
}

LinkUsage add_usage(const LinkUsage& usage, const LinkUsage& more, double times)
{
  LinkUsage sum;
  sum.flows = usage.flows + static_cast<int64_t>(std::llround(times * static_cast<double>(more.flows)));
  sum.flow_bytes = usage.flow_bytes + times * more.flow_bytes;
  sum.inter_domain_bytes = usage.inter_domain_bytes + times * more.inter_domain_bytes;
  // Both lists are by link id: merged.
  size_t a = 0, b = 0;
  while (a < usage.links.size() || b < more.links.size()) {
    const bool take_a = b == more.links.size() || (a < usage.links.size() && usage.links[a].link <= more.links[b].link);
    const bool take_b = a == usage.links.size() || (b < more.links.size() && more.links[b].link <= usage.links[a].link);
    LinkTraffic t = take_a ? usage.links[a] : LinkTraffic{more.links[b].link, 0, 0, 0};
    if (take_b) {
      t.bytes += times * more.links[b].bytes;
      t.flows += static_cast<int64_t>(std::llround(times * static_cast<double>(more.links[b].flows)));
      t.busy_s += times * more.links[b].busy_s;
    }
    sum.links.push_back(t);
    a += take_a ? 1 : 0;
    b += take_b ? 1 : 0;
  }
  return sum;
}

std::string to_text(const LinkUsage& usage)
{
  std::string text;
  const auto put = [&](double x) { append_exact(text, x); };
  const auto word = [&](int64_t n) {
    text += std::to_string(n);
    text += ' ';
  };
  word(usage.flows);
  put(usage.flow_bytes);
  put(usage.inter_domain_bytes);
  word(static_cast<int64_t>(usage.links.size()));
  for (const LinkTraffic& t : usage.links) {
    word(t.link);
    word(t.flows);
    put(t.bytes);
    put(t.busy_s);
  }
  return text;
}

LinkUsage link_usage_from_text(std::istream& in)
{
  LinkUsage usage;
  std::string word;
  const auto number = [&] {
    in >> word;
    return std::strtod(word.c_str(), nullptr);
  };
  size_t links = 0;
  in >> usage.flows;
  usage.flow_bytes = number();
  usage.inter_domain_bytes = number();
  in >> links;
  if (!in)
    throw std::logic_error("link usage: text not written by to_text");
  usage.links.resize(links);
  for (LinkTraffic& t : usage.links) {
    in >> t.link >> t.flows;
    t.bytes = number();
    t.busy_s = number();
  }
  if (!in)
    throw std::logic_error("link usage: text not written by to_text");
  return usage;
}

} // namespace gputwin::sim
