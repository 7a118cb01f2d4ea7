#pragma once
// Every flow of a platform, timed by the project's own max-min solver instead of SimGrid's.
//
// Flows that share links, directly or through others, form a component; each component is a FlowSet
// (flow_set.hpp: SimGrid's CM02 max-min restricted to the component, solved again at each start and end of one of
// its flows). The max-min solution of the whole network is the union of its components' solutions, so timing each
// component alone is exact. When a new flow touches links of several components, they merge: the active flows of the
// smaller ones move, with the bytes they have left, into the largest, and the new flow joins it. A component whose
// flows have ended leaves its links; one whose ended flows outnumber its active ones is rebuilt from its active
// flows alone and split into the components they form now (union-find over their links), so a component never
// carries much more than the traffic that really shares its links. Per-link state is a flat array indexed by the
// graph's link id. Plain C++: no SimGrid (flow_runner.hpp drives it from SimGrid's clock).

#include "gputwin/sim/flow_set.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <queue>
#include <tuple>
#include <vector>

namespace gputwin::sim {

// A flow that ended: its id (FlowNetwork::add's result) and when.
struct EndedFlow {
  int32_t flow = 0;
  double end_s = 0;
};

class FlowNetwork {
public:
  // REQUIRES: `link_bytes_per_s` (capacity per link id, > 0) outlives the network.
  explicit FlowNetwork(const std::vector<double>& link_bytes_per_s);

  // Starts a flow of `bytes` (>= 0) on links `links[0, count)` at `now_s` and returns its id. The components it
  // touches are first brought to `now_s`: the flows of theirs due by then are appended to `ended` (in order of end,
  // then id, per component). Ids of flows reported ended are reused from the next call on, so the caller handles
  // `ended` before calling again. REQUIRES: now_s is not before an earlier call's now_s.
  int32_t add(const int* links, size_t count, double bytes, double now_s, std::vector<EndedFlow>& ended);

  // Ends every flow due by `now_s` (within FlowSet::kEndTolerance), appending them to `ended`: components in order of
  // their next end, then of their index.
  void advance(double now_s, std::vector<EndedFlow>& ended);

  // When the next active flow ends at the current rates (infinity when none is active).
  double next_end_s();

  size_t active_flows() const { return active_; }
  // Components with active flows (for tests and statistics).
  size_t components() const;
  // Components merged into others, and components rebuilt from their active flows, so far.
  int64_t merges() const { return merges_; }
  int64_t rebuilds() const { return rebuilds_; }

private:
  struct Component {
    Component(const std::vector<double>& capacity, std::vector<int32_t>& link_index) : set(capacity, link_index) {}
    FlowSet set;
    std::vector<int32_t> flow_of; // per flow index of `set`: the network's flow id
    uint32_t version = 0;         // bumped at every change of `set`'s rates: older queue entries are stale
    bool in_use = false;
    bool dirty = false; // in dirty_: its next end is to be queued
    // A lone flow (most pipeline messages) is kept here, outside `set`, with the rate a set gives a flow alone
    // (its slowest link) and the same arithmetic; it moves into `set` when another flow joins its links.
    bool solo = false;
    int32_t solo_id = -1;
    std::vector<int> solo_links;
    double solo_start_s = 0;
    double solo_bytes = 0;
    double solo_rate = 0;
    double solo_end_s() const { return solo_bytes <= 0 ? solo_start_s : solo_start_s + solo_bytes / solo_rate; }
  };
  using QueueEntry = std::tuple<double, int32_t, uint32_t>; // (next end, component, version)

  int32_t new_component();
  void free_component(int32_t c);
  void mark_dirty(int32_t c);
  // Brings component `c` to now_s, ending its due flows; frees it when none is left, rebuilds it when its ended
  // flows outnumber its active ones.
  void advance_component(int32_t c, double now_s, std::vector<EndedFlow>& ended);
  // Moves component `from`'s active flows into `into` at now_s (both brought to now_s) and frees `from`.
  void merge(int32_t from, int32_t into, double now_s);
  // Re-adds `c`'s active flows into fresh components, one per group that shares links.
  void rebuild(int32_t c, double now_s);
  // Starts flow `id` as the lone flow of a new component.
  void start_solo(int32_t id, const int* links, size_t count, double bytes, double now_s);
  // Moves solo component `c`'s flow into its set at now_s (with the bytes it has left).
  void materialize(int32_t c, double now_s);
  int32_t place(int32_t c, int32_t id, const int* links, size_t count, double bytes, double now_s);
  void recycle_ended_ids();

  const std::vector<double>& capacity_;
  std::vector<int32_t> component_on_link_; // per link: the component with an active flow on it, or -1
  std::vector<int32_t> link_index_;        // per link: its index in the component's set (FlowSet's shared index)
  std::vector<std::unique_ptr<Component>> components_;
  std::vector<int32_t> free_components_;
  int32_t next_id_ = 0;     // flow ids handed out so far (then reused through free_ids_)
  std::vector<int32_t> free_ids_;
  std::vector<int32_t> ended_ids_; // reported ended by the last call: free from the next one
  std::vector<int32_t> dirty_;
  std::priority_queue<QueueEntry, std::vector<QueueEntry>, std::greater<QueueEntry>> queue_;
  size_t active_ = 0;
  int64_t merges_ = 0;
  int64_t rebuilds_ = 0;
  // Scratch.
  std::vector<int32_t> touched_;
  std::vector<int> links_;
  std::vector<int32_t> first_on_link_;
};

} // namespace gputwin::sim
