#include "gputwin/sim/flow_set.hpp"

#include <cmath>
#include <limits>

namespace gputwin::sim {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

} // namespace

int32_t FlowSet::local_link(int link)
{
  std::vector<int32_t>& hint = *hint_;
  if (hint.size() < capacity_.size())
    hint.resize(capacity_.size(), -1);
  const int32_t known = hint[static_cast<size_t>(link)];
  if (known >= 0 && static_cast<size_t>(known) < link_id_.size() && link_id_[static_cast<size_t>(known)] == link)
    return known;
  // New to the set (or its entry was overwritten by a set that took the link after this one's flows on it ended: a
  // second index for the link is then harmless, the first carries no active flow).
  const int32_t local = static_cast<int32_t>(link_id_.size());
  link_id_.push_back(link);
  link_active_.push_back(0);
  saturated_link_.push_back(0);
  hint[static_cast<size_t>(link)] = local;
  return local;
}

int32_t FlowSet::add(const int* links, size_t count, double bytes, double now_s)
{
  // The active flows move at their current rates up to now (solve() takes that off their bytes, for all at once);
  // from now on the new flow shares their links.
  if (now_s > time_s_) {
    if (!solved_)
      solve(); // the rates they moved at since the last event
    time_s_ = now_s;
  }
  const int32_t f = static_cast<int32_t>(remaining_.size());
  if (first_link_.empty())
    first_link_.push_back(0);
  for (size_t k = 0; k < count; ++k) {
    const int32_t l = local_link(links[k]);
    flow_links_.push_back(l);
    ++link_active_[static_cast<size_t>(l)];
  }
  first_link_.push_back(flow_links_.size());
  remaining_.push_back(std::max(bytes, 0.0));
  rate_.push_back(0);
  active_.push_back(1);
  active_list_.push_back(f);
  solved_ = false;
  next_end_s_ = -1;
  return f;
}

void FlowSet::clear()
{
  link_id_.clear();
  link_active_.clear();
  saturated_link_.clear();
  first_link_.clear();
  flow_links_.clear();
  remaining_.clear();
  rate_.clear();
  active_.clear();
  active_list_.clear();
  time_s_ = 0;
  rates_since_s_ = 0;
  solved_ = false;
  next_end_s_ = -1;
}

bool FlowSet::due(size_t f, double t) const
{
  const double end_s = remaining_[f] <= 0 ? time_s_ : time_s_ + remaining_[f] / rate_[f];
  return end_s <= t + kEndTolerance * t;
}

double FlowSet::next_end_s()
{
  if (!solved_)
    solve();
  if (next_end_s_ < 0) {
    next_end_s_ = kNever;
    for (const int32_t f : active_list_) {
      const size_t i = static_cast<size_t>(f);
      next_end_s_ = std::min(next_end_s_, remaining_[i] <= 0 ? time_s_ : time_s_ + remaining_[i] / rate_[i]);
    }
  }
  return next_end_s_;
}

double FlowSet::remaining_bytes(int32_t index, double now_s)
{
  if (!solved_)
    solve();
  const size_t i = static_cast<size_t>(index);
  return std::max(0.0, remaining_[i] - rate_[i] * (now_s - time_s_));
}

void FlowSet::solve()
{
  // Progressive filling, as SimGrid's lmm solver: the links whose fair share (bandwidth left / unfrozen flows) is
  // the smallest saturate; their unfrozen flows get that share, taken off the other links they cross; repeat.
  // Shares within kLevelTolerance of the smallest are one level (rounding would otherwise make every link its own),
  // so a solution costs O(levels x (links + the unfrozen flows' links)).
  solved_ = true;
  next_end_s_ = -1;
  // Flows added since the last solution moved at the rates of then (a new flow has rate 0) up to time_s_.
  if (time_s_ > rates_since_s_) {
    const double dt = time_s_ - rates_since_s_;
    for (const int32_t f : active_list_)
      remaining_[static_cast<size_t>(f)] -= rate_[static_cast<size_t>(f)] * dt;
  }
  rates_since_s_ = time_s_;
  if (active_list_.size() <= 1) {
    // One flow (the common case: a lone transfer): the first level is its slowest link, and it is alone there.
    for (const int32_t f : active_list_) {
      double rate = kNever; // a flow on no link is not limited
      const size_t i = static_cast<size_t>(f);
      for (size_t k = first_link_[i]; k < first_link_[i + 1]; ++k)
        rate = std::min(rate, capacity_[static_cast<size_t>(link_id_[static_cast<size_t>(flow_links_[k])])]);
      rate_[i] = std::max(rate, 0.0);
    }
    return;
  }
  const size_t links = link_id_.size();
  cap_left_.resize(links);
  unfrozen_.resize(links);
  std::vector<int32_t>& open = open_; // links with unfrozen flows
  open.clear();
  for (size_t l = 0; l < links; ++l) {
    if (link_active_[l] == 0)
      continue;
    cap_left_[l] = capacity_[static_cast<size_t>(link_id_[l])];
    unfrozen_[l] = link_active_[l];
    open.push_back(static_cast<int32_t>(l));
  }
  // active_: 1 while a flow is unfrozen, 2 once its rate is set (both mean active).
  std::vector<int32_t>& unfrozen_flows = unfrozen_flows_;
  unfrozen_flows.assign(active_list_.begin(), active_list_.end());
  for (const int32_t f : active_list_) {
    rate_[static_cast<size_t>(f)] = kNever; // a flow on no link is not limited
    active_[static_cast<size_t>(f)] = 1;
  }
  std::vector<double>& fair_share = fair_share_; // per open link, this round
  while (!open.empty()) {
    double level = kNever;
    fair_share.resize(open.size());
    for (size_t o = 0; o < open.size(); ++o) {
      const size_t l = static_cast<size_t>(open[o]);
      fair_share[o] = cap_left_[l] / unfrozen_[l];
      level = std::min(level, fair_share[o]);
    }
    const double limit = level + kLevelTolerance * std::fabs(level);
    for (size_t o = 0; o < open.size(); ++o)
      saturated_link_[static_cast<size_t>(open[o])] = fair_share[o] <= limit;
    // Every unfrozen flow of a saturated link gets the level's share, as SimGrid gives min_usage to every variable
    // of its saturated constraints (so exact ties round alike). Each link they cross loses that same share once per
    // such flow, so the order they are taken in changes no bit: they are taken in the order of the flow list, each
    // read from the flat link array (walking the saturated links' own flow lists cost a cache miss per link).
    const double share = std::max(level, 0.0);
    size_t kept = 0;
    for (const int32_t f : unfrozen_flows) {
      const size_t fi = static_cast<size_t>(f);
      bool saturated = false;
      for (size_t k = first_link_[fi]; k < first_link_[fi + 1] && !saturated; ++k)
        saturated = saturated_link_[static_cast<size_t>(flow_links_[k])] != 0;
      if (!saturated) {
        unfrozen_flows[kept++] = f;
        continue;
      }
      active_[fi] = 2;
      rate_[fi] = share;
      for (size_t k = first_link_[fi]; k < first_link_[fi + 1]; ++k) {
        const size_t m = static_cast<size_t>(flow_links_[k]);
        cap_left_[m] -= share;
        --unfrozen_[m];
      }
    }
    unfrozen_flows.resize(kept);
    for (const int32_t l : open)
      saturated_link_[static_cast<size_t>(l)] = 0;
    std::erase_if(open, [&](int32_t l) { return unfrozen_[static_cast<size_t>(l)] == 0; });
  }
}

} // namespace gputwin::sim
