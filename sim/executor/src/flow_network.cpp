#include "gputwin/sim/flow_network.hpp"

#include "gputwin/sim/link_components.hpp"

#include <algorithm>
#include <limits>

namespace gputwin::sim {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

// A component is rebuilt from its active flows when the set holds more than this many ended ones beyond them: its
// solutions walk every flow a link ever carried, and it may since have fallen apart into independent groups.
bool worth_rebuilding(const FlowSet& set)
{
  return set.flows_added() > 2 * set.active_flows().size() + 16;
}

} // namespace

FlowNetwork::FlowNetwork(const std::vector<double>& link_bytes_per_s)
    : capacity_(link_bytes_per_s), component_on_link_(link_bytes_per_s.size(), -1),
      link_index_(link_bytes_per_s.size(), -1),
      first_on_link_(link_bytes_per_s.size(), -1)
{
}

size_t FlowNetwork::components() const
{
  size_t n = 0;
  for (const auto& c : components_)
    n += c->in_use ? 1 : 0;
  return n;
}

int32_t FlowNetwork::new_component()
{
  int32_t c;
  if (free_components_.empty()) {
    c = static_cast<int32_t>(components_.size());
    components_.push_back(std::make_unique<Component>(capacity_, link_index_));
  } else {
    c = free_components_.back();
    free_components_.pop_back();
  }
  Component& comp = *components_[static_cast<size_t>(c)];
  comp.in_use = true;
  ++comp.version;
  return c;
}

// The slot keeps its memory for the next component (most components are one flow: no allocation per flow).
void FlowNetwork::free_component(int32_t c)
{
  Component& comp = *components_[static_cast<size_t>(c)];
  comp.set.clear();
  comp.flow_of.clear();
  comp.solo = false;
  comp.in_use = false;
  ++comp.version;
  free_components_.push_back(c);
}

void FlowNetwork::mark_dirty(int32_t c)
{
  Component& comp = *components_[static_cast<size_t>(c)];
  ++comp.version;
  if (!comp.dirty) {
    comp.dirty = true;
    dirty_.push_back(c);
  }
}

void FlowNetwork::recycle_ended_ids()
{
  free_ids_.insert(free_ids_.end(), ended_ids_.begin(), ended_ids_.end());
  ended_ids_.clear();
}

void FlowNetwork::start_solo(int32_t id, const int* links, size_t count, double bytes, double now_s)
{
  const int32_t c = new_component();
  Component& comp = *components_[static_cast<size_t>(c)];
  comp.solo = true;
  comp.solo_id = id;
  comp.solo_links.assign(links, links + count);
  comp.solo_start_s = now_s;
  comp.solo_bytes = std::max(bytes, 0.0);
  double rate = kNever; // as FlowSet::solve for a flow alone: its slowest link; not limited on no link
  for (size_t k = 0; k < count; ++k) {
    rate = std::min(rate, capacity_[static_cast<size_t>(links[k])]);
    component_on_link_[static_cast<size_t>(links[k])] = c;
  }
  comp.solo_rate = std::max(rate, 0.0);
  mark_dirty(c);
}

void FlowNetwork::materialize(int32_t c, double now_s)
{
  Component& comp = *components_[static_cast<size_t>(c)];
  comp.solo = false;
  // What a set holding it since its start would have left (FlowSet::remaining_bytes' arithmetic).
  const double left = std::max(0.0, comp.solo_bytes - comp.solo_rate * (now_s - comp.solo_start_s));
  place(c, comp.solo_id, comp.solo_links.data(), comp.solo_links.size(), left, now_s);
  mark_dirty(c);
}

void FlowNetwork::advance_component(int32_t c, double now_s, std::vector<EndedFlow>& ended)
{
  Component& comp = *components_[static_cast<size_t>(c)];
  if (comp.solo) {
    const double end_s = comp.solo_end_s();
    if (!(end_s <= now_s + FlowSet::kEndTolerance * now_s))
      return;
    ended.push_back(EndedFlow{comp.solo_id, end_s});
    ended_ids_.push_back(comp.solo_id);
    --active_;
    for (const int link : comp.solo_links)
      if (component_on_link_[static_cast<size_t>(link)] == c)
        component_on_link_[static_cast<size_t>(link)] = -1;
    free_component(c);
    return;
  }
  const size_t before = comp.set.active_flows().size();
  comp.set.advance(
      now_s,
      [&](int32_t f, double end_s) {
        const int32_t id = comp.flow_of[static_cast<size_t>(f)];
        ended.push_back(EndedFlow{id, end_s});
        ended_ids_.push_back(id);
        --active_;
      },
      [&](int link) {
        if (component_on_link_[static_cast<size_t>(link)] == c)
          component_on_link_[static_cast<size_t>(link)] = -1;
      });
  if (comp.set.active_flows().size() == before)
    return;
  if (comp.set.active_flows().empty())
    free_component(c);
  else if (worth_rebuilding(comp.set))
    rebuild(c, now_s);
  else
    mark_dirty(c);
}

int32_t FlowNetwork::place(int32_t c, int32_t id, const int* links, size_t count, double bytes, double now_s)
{
  Component& comp = *components_[static_cast<size_t>(c)];
  const int32_t local = comp.set.add(links, count, bytes, now_s);
  if (comp.flow_of.size() <= static_cast<size_t>(local))
    comp.flow_of.resize(static_cast<size_t>(local) + 1, -1);
  comp.flow_of[static_cast<size_t>(local)] = id;
  for (size_t k = 0; k < count; ++k)
    component_on_link_[static_cast<size_t>(links[k])] = c;
  return local;
}

void FlowNetwork::merge(int32_t from, int32_t into, double now_s)
{
  Component& src = *components_[static_cast<size_t>(from)];
  std::vector<int32_t> flows = src.set.active_flows();
  std::sort(flows.begin(), flows.end()); // in the order they joined: the same rounding whichever way it is called
  for (const int32_t f : flows) {
    links_.clear();
    src.set.links_of(f, links_);
    const double left = src.set.remaining_bytes(f, now_s);
    place(into, src.flow_of[static_cast<size_t>(f)], links_.data(), links_.size(), left, now_s);
  }
  free_component(from);
  mark_dirty(into);
  ++merges_;
}

void FlowNetwork::rebuild(int32_t c, double now_s)
{
  // The active flows, in the order they joined, with their links and bytes left.
  Component& comp = *components_[static_cast<size_t>(c)];
  std::vector<int32_t> flows = comp.set.active_flows();
  std::sort(flows.begin(), flows.end());
  std::vector<int32_t> ids;
  std::vector<double> left;
  std::vector<std::vector<int>> links(flows.size());
  for (size_t i = 0; i < flows.size(); ++i) {
    ids.push_back(comp.flow_of[static_cast<size_t>(flows[i])]);
    left.push_back(comp.set.remaining_bytes(flows[i], now_s));
    comp.set.links_of(flows[i], links[i]);
  }
  free_component(c);
  const std::vector<int32_t> group =
      link_components(flows.size(), [&](size_t i) -> const std::vector<int>& { return links[i]; }, first_on_link_);
  std::vector<int32_t> component_of_group(flows.size(), -1);
  for (size_t i = 0; i < flows.size(); ++i) {
    int32_t& into = component_of_group[static_cast<size_t>(group[i])];
    if (into < 0)
      into = new_component();
    place(into, ids[i], links[i].data(), links[i].size(), left[i], now_s);
    mark_dirty(into);
  }
  ++rebuilds_;
}

int32_t FlowNetwork::add(const int* links, size_t count, double bytes, double now_s, std::vector<EndedFlow>& ended)
{
  recycle_ended_ids();
  // The components the flow touches, brought to now (which may free some of its links).
  const auto collect_touched = [&] {
    touched_.clear();
    for (size_t k = 0; k < count; ++k) {
      const int32_t c = component_on_link_[static_cast<size_t>(links[k])];
      if (c >= 0 && std::find(touched_.begin(), touched_.end(), c) == touched_.end())
        touched_.push_back(c);
    }
  };
  collect_touched();
  for (const int32_t c : touched_)
    if (components_[static_cast<size_t>(c)]->in_use)
      advance_component(c, now_s, ended);
  collect_touched(); // advancing may have freed some of its links
  int32_t id;
  if (free_ids_.empty()) {
    id = next_id_++;
  } else {
    id = free_ids_.back();
    free_ids_.pop_back();
  }
  ++active_;
  if (touched_.empty()) {
    start_solo(id, links, count, bytes, now_s);
    return id;
  }
  for (const int32_t c : touched_)
    if (components_[static_cast<size_t>(c)]->solo)
      materialize(c, now_s);
  // The largest takes the others' flows and the new one.
  int32_t into = -1;
  for (const int32_t c : touched_)
    if (into < 0 || components_[static_cast<size_t>(c)]->set.active_flows().size() >
                        components_[static_cast<size_t>(into)]->set.active_flows().size())
      into = c;
  for (const int32_t c : touched_)
    if (c != into)
      merge(c, into, now_s);

  place(into, id, links, count, bytes, now_s);
  if (worth_rebuilding(components_[static_cast<size_t>(into)]->set))
    rebuild(into, now_s);
  else
    mark_dirty(into);
  return id;
}

double FlowNetwork::next_end_s()
{
  for (const int32_t c : dirty_) {
    Component& comp = *components_[static_cast<size_t>(c)];
    comp.dirty = false;
    if (comp.in_use)
      queue_.emplace(comp.solo ? comp.solo_end_s() : comp.set.next_end_s(), c, comp.version);
  }
  dirty_.clear();
  while (!queue_.empty()) {
    const auto& [end_s, c, version] = queue_.top();
    const Component& comp = *components_[static_cast<size_t>(c)];
    if (comp.in_use && comp.version == version)
      return end_s;
    queue_.pop();
  }
  return kNever;
}

void FlowNetwork::advance(double now_s, std::vector<EndedFlow>& ended)
{
  recycle_ended_ids();
  for (;;) {
    const double t = next_end_s();
    if (!(t <= now_s + FlowSet::kEndTolerance * now_s))
      return;
    const int32_t c = std::get<1>(queue_.top());
    queue_.pop();
    advance_component(c, now_s, ended);
    if (components_[static_cast<size_t>(c)]->in_use)
      mark_dirty(c); // queued again (its entry was taken)
  }
}

} // namespace gputwin::sim
