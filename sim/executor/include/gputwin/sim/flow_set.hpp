#pragma once
// Flows that share links max-min fairly and have those links to themselves, timed without SimGrid.
//
// The flow runner (flow_runner.hpp) hands a set of flows here while no other traffic touches their links. Their
// rates are then SimGrid's CM02 max-min solution restricted to the set (no link latency, every flow of weight 1):
// progressive filling -- the link with the smallest fair share (remaining bandwidth / unfrozen flows) saturates,
// its flows get that share, which is taken off the other links of their routes, and so on. The rates hold until
// the next start or end of a flow; then the set is solved again. So a set's flows end when they would in SimGrid,
// up to rounding and the two tolerances below (1e-12 relative). Plain C++: no SimGrid.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gputwin::sim {

class FlowSet {
public:
  // Completions closer than this (relative to the simulated time) end together: near-ties of the rounding of the
  // rates would otherwise cost one solution each.
  static constexpr double kEndTolerance = 1e-12;
  // Fair shares closer than this (relative) saturate in one round of progressive filling.
  static constexpr double kLevelTolerance = 1e-12;

  // REQUIRES: `link_bytes_per_s` (capacity per link id, > 0) outlives the set.
  explicit FlowSet(const std::vector<double>& link_bytes_per_s) : capacity_(link_bytes_per_s), hint_(&own_hint_) {}
  // The same, with a per-link index shared by sets that never hold one link at the same time (a FlowNetwork's
  // components): the sets then need no index of their own. REQUIRES: `shared_index` outlives the set.
  FlowSet(const std::vector<double>& link_bytes_per_s, std::vector<int32_t>& shared_index)
      : capacity_(link_bytes_per_s), hint_(&shared_index)
  {
  }

  // Starts a flow of `bytes` (>= 0) on the links `links[0, count)` at `now_s`; returns its index (0, 1, ...).
  // REQUIRES: advance(now_s) was called first (now_s is not before the set's last event).
  int32_t add(const int* links, size_t count, double bytes, double now_s);

  // Processes the set's events up to `now_s`, ending every flow due by then (within kEndTolerance): on_end(index,
  // end_s) for each (in order of end, then index), on_link_free(link) for each link no active flow uses any more.
  template <class OnEnd, class OnLinkFree>
  void advance(double now_s, OnEnd&& on_end, OnLinkFree&& on_link_free);

  // When the next active flow ends at the current rates (infinity when none is active).
  double next_end_s();
  // Bytes flow `index` has left to move at `now_s` (>= the last event). REQUIRES: the flow is active.
  double remaining_bytes(int32_t index, double now_s);
  // Empties the set (its time back to 0), keeping its memory for reuse.
  void clear();
  // Active flow indices (in no particular order).
  const std::vector<int32_t>& active_flows() const { return active_list_; }
  // Flows added since the set was made or cleared, active or ended (indices 0 .. flows_added() - 1).
  size_t flows_added() const { return remaining_.size(); }
  // Flow `index`'s links (the ids add() was given), appended to `out`.
  void links_of(int32_t index, std::vector<int>& out) const
  {
    const size_t i = static_cast<size_t>(index);
    for (size_t k = first_link_[i]; k < first_link_[i + 1]; ++k)
      out.push_back(link_id_[static_cast<size_t>(flow_links_[k])]);
  }

private:
  int32_t local_link(int link);
  void solve(); // the rates of the active flows (progressive filling)
  bool due(size_t f, double t) const;

  const std::vector<double>& capacity_;
  // Per link id: the set's index of that link, if link_id_ there names it (an entry may be another set's, or stale:
  // checked, never trusted). A flat array instead of a hash map: no hashing per flow, nothing to clear.
  std::vector<int32_t>* hint_;
  std::vector<int32_t> own_hint_;
  // Links the set has used: global id, active flows on it.
  std::vector<int> link_id_;
  std::vector<int32_t> link_active_;
  std::vector<char> saturated_link_; // solve()'s: saturated in the current round (0 between rounds)
  // Flows: their local links (flat, by offset), bytes left at `time_s_`, rate, active flag.
  std::vector<size_t> first_link_;
  std::vector<int32_t> flow_links_;
  std::vector<double> remaining_;
  std::vector<double> rate_;
  std::vector<char> active_; // 0 ended; else active (solve() marks 1 unfrozen, 2 frozen)
  std::vector<int32_t> active_list_;
  double time_s_ = 0;        // the last event (a start or an end): remaining_ is as of then once solved_
  double rates_since_s_ = 0; // remaining_ is as of this time, and rate_ held since (solve() brings it to time_s_)
  bool solved_ = false;    // rate_ is the max-min solution of the active flows
  double next_end_s_ = -1; // cached next_end_s() while solved_, or < 0
  // Scratch of solve().
  std::vector<double> cap_left_;
  std::vector<int32_t> unfrozen_;
  std::vector<int32_t> open_;
  std::vector<double> fair_share_;
  std::vector<int32_t> unfrozen_flows_;
  std::vector<int32_t> ended_; // advance()'s
};

template <class OnEnd, class OnLinkFree>
void FlowSet::advance(double now_s, OnEnd&& on_end, OnLinkFree&& on_link_free)
{
  // With no time elapsed since flows were added, only empty flows are due; they are left to the next call after a
  // solution (next_end_s()), which spares one solution per flow while a burst of flows starts at one instant.
  if (!(now_s > time_s_) && !solved_)
    return;
  for (;;) {
    const double t = next_end_s();
    if (!(t <= now_s + kEndTolerance * now_s))
      break;
    // Every active flow moves at its rate up to t; those due end there (in index order: deterministic).
    const double dt = t - time_s_;
    std::vector<int32_t>& ended = ended_;
    ended.clear();
    size_t kept = 0;
    for (const int32_t f : active_list_) {
      const size_t i = static_cast<size_t>(f);
      if (due(i, t)) {
        ended.push_back(f);
      } else {
        remaining_[i] -= rate_[i] * dt;
        active_list_[kept++] = f;
      }
    }
    active_list_.resize(kept);
    time_s_ = t;
    rates_since_s_ = t;
    solved_ = false;
    next_end_s_ = -1;
    std::sort(ended.begin(), ended.end());
    for (const int32_t f : ended) {
      const size_t i = static_cast<size_t>(f);
      active_[i] = 0;
      remaining_[i] = 0;
      for (size_t k = first_link_[i]; k < first_link_[i + 1]; ++k) {
        const size_t l = static_cast<size_t>(flow_links_[k]);
        if (--link_active_[l] == 0)
          on_link_free(link_id_[l]);
      }
      on_end(f, t);
    }
  }
}

} // namespace gputwin::sim
