#include "gputwin/sim/link_report.hpp"

#include "gputwin/sim/dag_executor.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

namespace gputwin::sim {

namespace {

// Which communication a flow belongs to, the same for every program taking part: a collective by (group,
// sequence), a pipeline message by (source rank, destination rank, sequence).
using CommKey = std::tuple<int, int64_t, int64_t, int64_t>;

std::optional<CommKey> comm_key(const traces::RankProgram& program, const traces::Op& op)
{
  switch (op.kind) {
  case traces::OpKind::Collective: return CommKey{0, op.group, op.sequence, 0};
  case traces::OpKind::Send: return CommKey{1, program.rank, op.peer, op.sequence};
  case traces::OpKind::Recv: return CommKey{1, op.peer, program.rank, op.sequence};
  default: return std::nullopt;
  }
}

const traces::Op* op_by_id(const traces::RankProgram& program, int64_t id)
{
  if (id >= 0 && static_cast<size_t>(id) < program.ops.size() && program.ops[static_cast<size_t>(id)].id == id)
    return &program.ops[static_cast<size_t>(id)];
  const auto it = std::lower_bound(program.ops.begin(), program.ops.end(), id,
                                   [](const traces::Op& op, int64_t value) { return op.id < value; });
  return it != program.ops.end() && it->id == id ? &*it : nullptr;
}

// The flows of each communication a span of `program` waited on, by its key (only those: a big log has millions of
// flows); a communication without flows has an empty list.
std::map<CommKey, std::vector<size_t>> flows_of_waited_comms(const FlowLog& log,
                                                             const std::vector<traces::RankProgram>& programs,
                                                             size_t program, const std::vector<ExposedSpan>& spans)
{
  std::map<CommKey, std::vector<size_t>> flows_of;
  for (const ExposedSpan& span : spans)
    if (const traces::Op* op = op_by_id(programs.at(program), span.op))
      if (const std::optional<CommKey> key = comm_key(programs[program], *op))
        flows_of.try_emplace(*key);
  int64_t last_tag = -1; // an op's flows are mostly logged one after another: its lookup is reused
  std::vector<size_t>* last_list = nullptr;
  for (size_t i = 0; i < log.flows.size() && !flows_of.empty(); ++i) {
    const int64_t tag = log.flows[i].tag;
    if (tag < 0 || flow_tag_program(tag) >= programs.size())
      continue;
    if (tag != last_tag) {
      last_tag = tag;
      last_list = nullptr;
      const traces::RankProgram& p = programs[flow_tag_program(tag)];
      if (flow_tag_op(tag) < p.ops.size())
        if (const auto key = comm_key(p, p.ops[flow_tag_op(tag)]))
          if (const auto found = flows_of.find(*key); found != flows_of.end())
            last_list = &found->second;
    }
    if (last_list != nullptr)
      last_list->push_back(i);
  }
  return flows_of;
}

} // namespace

const char* to_string(LinkClass kind)
{
  switch (kind) {
  case LinkClass::Nvlink: return "nvlink";
  case LinkClass::NvswitchPort: return "nvswitch_port";
  case LinkClass::Pcie: return "pcie";
  case LinkClass::NicTx: return "nic_tx";
  case LinkClass::NicRx: return "nic_rx";
  case LinkClass::LeafSpine: return "leaf_spine";
  case LinkClass::SpineCore: return "spine_core";
  }
  return "?";
}

LinkClass link_class(const topo::ClusterGraph& graph, int link)
{
  const topo::Link& l = graph.links().at(static_cast<size_t>(link));
  const topo::Vertex& from = graph.vertices()[static_cast<size_t>(l.from)];
  const topo::Vertex& to = graph.vertices()[static_cast<size_t>(l.to)];
  switch (l.kind) {
  case topo::LinkKind::Nvlink: return from.kind == topo::VertexKind::Gpu ? LinkClass::Nvlink : LinkClass::NvswitchPort;
  case topo::LinkKind::Pcie: return LinkClass::Pcie;
  case topo::LinkKind::NicToFabric: return from.kind == topo::VertexKind::Nic ? LinkClass::NicTx : LinkClass::NicRx;
  case topo::LinkKind::Fabric: return std::max(from.level, to.level) >= 3 ? LinkClass::SpineCore : LinkClass::LeafSpine;
  }
  return LinkClass::Pcie;
}

LinkReport link_report(const topo::ClusterGraph& graph, const FlowLog& log, double window_s)
{
  return link_report(graph, link_usage(graph, log), window_s);
}

LinkReport link_report(const topo::ClusterGraph& graph, const LinkUsage& usage, double window_s)
{
  if (!(window_s > 0))
    throw std::invalid_argument("link_report: the window must be positive");
  LinkReport report;
  report.window_s = window_s;
  report.flows = usage.flows;
  report.flow_bytes = usage.flow_bytes;
  report.inter_domain_bytes = usage.inter_domain_bytes;
  const size_t link_count = graph.links().size();
  std::vector<LinkUse> uses(link_count);
  for (const LinkTraffic& t : usage.links)
    uses.at(static_cast<size_t>(t.link)) = LinkUse{t.link, t.bytes, t.flows, t.busy_s, 0, 0};
  std::vector<LinkClassTotal> kinds(link_class_count);
  for (int k = 0; k < link_class_count; ++k)
    kinds[static_cast<size_t>(k)].kind = static_cast<LinkClass>(k);
  for (size_t link = 0; link < link_count; ++link) {
    LinkClassTotal& total = kinds[static_cast<size_t>(link_class(graph, static_cast<int>(link)))];
    ++total.links;
    LinkUse& use = uses[link];
    if (use.flows == 0)
      continue;
    use.busy_fraction = use.busy_s / window_s;
    use.utilisation = use.bytes / (nccl_link_bytes_per_s(graph.spec(), graph.links()[link]) * window_s);
    ++total.used;
    total.bytes += use.bytes;
    total.mean_busy_fraction += use.busy_fraction;
    total.max_busy_fraction = std::max(total.max_busy_fraction, use.busy_fraction);
    report.links.push_back(use);
  }
  for (LinkClassTotal& total : kinds) {
    if (total.links == 0)
      continue;
    if (total.used > 0)
      total.mean_busy_fraction /= static_cast<double>(total.used);
    if (total.used > 0 && (!report.busiest_kind || total.mean_busy_fraction >
                                                        kinds[static_cast<size_t>(*report.busiest_kind)].mean_busy_fraction))
      report.busiest_kind = total.kind;
    report.kinds.push_back(total);
  }
  return report;
}

std::vector<const LinkUse*> busiest_links(const LinkReport& report, size_t count)
{
  std::vector<const LinkUse*> links;
  for (const LinkUse& use : report.links)
    links.push_back(&use);
  std::stable_sort(links.begin(), links.end(), [](const LinkUse* a, const LinkUse* b) {
    if (a->busy_s != b->busy_s)
      return a->busy_s > b->busy_s;
    return a->bytes > b->bytes;
  });
  if (links.size() > count)
    links.resize(count);
  return links;
}

ExposedAttribution attribute_exposed(const topo::ClusterGraph& graph, const FlowLog& log,
                                     const std::vector<traces::RankProgram>& programs, size_t program,
                                     const std::vector<ExposedSpan>& spans)
{
  ExposedAttribution out;
  const std::map<CommKey, std::vector<size_t>> flows_of = flows_of_waited_comms(log, programs, program, spans);
  RouteCache route(graph);
  // Each span's op flows and transfer window; the links they cross are the candidates.
  struct Held {
    double start_s, end_s;                // the span
    double w_start_s = 0, w_end_s = 0;     // the op's transfer window
    std::vector<int> links;                // links its flows cross
  };
  std::vector<Held> held;
  std::vector<char> candidate(graph.links().size(), 0);
  for (const ExposedSpan& span : spans) {
    const double length = span.end_s - span.start_s;
    out.exposed_s += length;
    const traces::Op* op = op_by_id(programs.at(program), span.op);
    const std::optional<CommKey> key = op ? comm_key(programs[program], *op) : std::nullopt;
    const auto found = key ? flows_of.find(*key) : flows_of.end();
    if (found == flows_of.end() || found->second.empty()) {
      out.unattributed_s += length;
      continue;
    }
    Held h{span.start_s, span.end_s, 1e300, -1e300, {}};
    for (const size_t i : found->second) {
      const FlowRecord& f = log.flows[i];
      h.w_start_s = std::min(h.w_start_s, f.start_s);
      h.w_end_s = std::max(h.w_end_s, f.end_s);
      for (const int link : route(f.src_gpu, f.dst_gpu))
        h.links.push_back(link);
    }
    std::sort(h.links.begin(), h.links.end());
    h.links.erase(std::unique(h.links.begin(), h.links.end()), h.links.end());
    const double inside = std::min(h.end_s, h.w_end_s) - std::max(h.start_s, h.w_start_s);
    if (!(h.w_end_s > h.w_start_s) || !(inside > 0)) {
      out.unattributed_s += length;
      continue;
    }
    out.unattributed_s += length - inside;
    for (const int link : h.links)
      candidate[static_cast<size_t>(link)] = 1;
    held.push_back(std::move(h));
  }
  // Every flow on a candidate link as (start, end, rate), by start; and the longest on each, to bound a search.
  struct OnLink {
    double start_s, end_s, bytes_per_s;
  };
  std::unordered_map<int, std::vector<OnLink>> on_link;
  for (const FlowRecord& f : log.flows) {
    if (!(f.end_s > f.start_s))
      continue;
    for (const int link : route(f.src_gpu, f.dst_gpu))
      if (candidate[static_cast<size_t>(link)])
        on_link[link].push_back(OnLink{f.start_s, f.end_s, f.bytes / (f.end_s - f.start_s)});
  }
  std::unordered_map<int, double> longest_s;
  for (auto& [link, list] : on_link) {
    std::sort(list.begin(), list.end(), [](const OnLink& a, const OnLink& b) { return a.start_s < b.start_s; });
    double longest = 0;
    for (const OnLink& f : list)
      longest = std::max(longest, f.end_s - f.start_s);
    longest_s[link] = longest;
  }
  std::map<int, double> by_link;
  for (const Held& h : held) {
    const double window = h.w_end_s - h.w_start_s;
    std::vector<double> load(h.links.size(), 0);
    double most = 0;
    for (size_t k = 0; k < h.links.size(); ++k) {
      const int link = h.links[k];
      const std::vector<OnLink>& list = on_link[link];
      auto it = std::lower_bound(list.begin(), list.end(), h.w_start_s - longest_s[link],
                                 [](const OnLink& f, double t) { return f.start_s < t; });
      double bytes = 0;
      for (; it != list.end() && it->start_s < h.w_end_s; ++it) {
        const double overlap = std::min(it->end_s, h.w_end_s) - std::max(it->start_s, h.w_start_s);
        if (overlap > 0)
          bytes += it->bytes_per_s * overlap;
      }
      load[k] = bytes / (nccl_link_bytes_per_s(graph.spec(), graph.links()[static_cast<size_t>(link)]) * window);
      most = std::max(most, load[k]);
    }
    std::vector<int> limiting;
    for (size_t k = 0; k < h.links.size(); ++k)
      if (load[k] >= most * (1 - 1e-9))
        limiting.push_back(h.links[k]);
    const double inside = std::min(h.end_s, h.w_end_s) - std::max(h.start_s, h.w_start_s);
    for (const int link : limiting)
      by_link[link] += inside / static_cast<double>(limiting.size());
  }
  std::vector<double> by_kind(link_class_count, 0);
  for (const auto& [link, seconds] : by_link) {
    out.links.emplace_back(link, seconds);
    by_kind[static_cast<size_t>(link_class(graph, link))] += seconds;
  }
  std::stable_sort(out.links.begin(), out.links.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (int k = 0; k < link_class_count; ++k)
    if (by_kind[static_cast<size_t>(k)] > 0)
      out.kinds.emplace_back(static_cast<LinkClass>(k), by_kind[static_cast<size_t>(k)]);
  std::stable_sort(out.kinds.begin(), out.kinds.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

std::vector<std::pair<double, double>> link_utilisation_steps(const topo::ClusterGraph& graph, const FlowLog& log,
                                                              int link)
{
  const double bandwidth = nccl_link_bytes_per_s(graph.spec(), graph.links().at(static_cast<size_t>(link)));
  // (time, change of the summed rate, change of the flow count): ends before starts at the same instant.
  std::vector<std::tuple<double, int, double>> events;
  RouteCache route(graph);
  for (const FlowRecord& f : log.flows) {
    if (!(f.end_s > f.start_s))
      continue;
    const std::vector<int>& links = route(f.src_gpu, f.dst_gpu);
    if (std::find(links.begin(), links.end(), link) == links.end())
      continue;
    const double rate = f.bytes / (f.end_s - f.start_s) / bandwidth;
    events.emplace_back(f.start_s, +1, rate);
    events.emplace_back(f.end_s, -1, -rate);
  }
  std::sort(events.begin(), events.end());
  std::vector<std::pair<double, double>> steps;
  double value = 0;
  int64_t active = 0;
  for (size_t i = 0; i < events.size();) {
    const double t = std::get<0>(events[i]);
    for (; i < events.size() && std::get<0>(events[i]) == t; ++i) {
      active += std::get<1>(events[i]);
      value += std::get<2>(events[i]);
    }
    if (active == 0)
      value = 0; // no rounding residue once the link is idle
    if (steps.empty() || steps.back().second != value)
      steps.emplace_back(t, value);
  }
  return steps;
}

} // namespace gputwin::sim
