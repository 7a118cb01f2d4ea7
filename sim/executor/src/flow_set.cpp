#include "gputwin/sim/flow_set.hpp"

#include <cmath>
#include <limits>

namespace gputwin::sim {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

} // namespace

int32_t FlowSet::local_link(int link)
{
  const auto [it, inserted] = local_of_.emplace(link, static_cast<int32_t>(link_id_.size()));
  if (inserted) {
    link_id_.push_back(link);
    link_active_.push_back(0);
    if (link_flows_.size() < link_id_.size())
      link_flows_.emplace_back(); // else a cleared one is reused
  }
  return it->second;
}

int32_t FlowSet::add(const int* links, size_t count, double bytes, double now_s)
{
  // The active flows move at their rates up to now; from now on the new flow shares their links.
  if (now_s > time_s_) {
    const double dt = now_s - time_s_;
    for (const int32_t f : active_list_)
      remaining_[static_cast<size_t>(f)] -= rate_[static_cast<size_t>(f)] * dt;
    time_s_ = now_s;
  }
  const int32_t f = static_cast<int32_t>(remaining_.size());
  if (first_link_.empty())
    first_link_.push_back(0);
  for (size_t k = 0; k < count; ++k) {
    const int32_t l = local_link(links[k]);
    flow_links_.push_back(l);
    ++link_active_[static_cast<size_t>(l)];
    link_flows_[static_cast<size_t>(l)].push_back(f);
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
  local_of_.clear();
  link_id_.clear();
  link_active_.clear();
  for (std::vector<int32_t>& flows : link_flows_)
    flows.clear();
  first_link_.clear();
  flow_links_.clear();
  remaining_.clear();
  rate_.clear();
  active_.clear();
  active_list_.clear();
  time_s_ = 0;
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
  // so a solution costs O(levels x links + flow-links).
  const size_t links = link_id_.size();
  cap_left_.assign(links, 0);
  unfrozen_.assign(links, 0);
  std::vector<int32_t> open; // links with unfrozen flows
  for (size_t l = 0; l < links; ++l) {
    cap_left_[l] = capacity_[static_cast<size_t>(link_id_[l])];
    unfrozen_[l] = link_active_[l];
    if (unfrozen_[l] > 0)
      open.push_back(static_cast<int32_t>(l));
  }
  frozen_.assign(remaining_.size(), 0);
  for (const int32_t f : active_list_)
    rate_[static_cast<size_t>(f)] = kNever; // a flow on no link is not limited
  std::vector<int32_t> saturated;
  while (!open.empty()) {
    double level = kNever;
    for (const int32_t l : open)
      level = std::min(level, cap_left_[static_cast<size_t>(l)] / unfrozen_[static_cast<size_t>(l)]);
    const double limit = level + kLevelTolerance * std::fabs(level);
    saturated.clear();
    for (const int32_t l : open)
      if (cap_left_[static_cast<size_t>(l)] / unfrozen_[static_cast<size_t>(l)] <= limit)
        saturated.push_back(l);
    // Every unfrozen flow of a saturated link gets the level's share, as SimGrid gives min_usage to every variable
    // of its saturated constraints (so exact ties round alike).
    const double share = std::max(level, 0.0);
    for (const int32_t l : saturated)
      for (const int32_t f : link_flows_[static_cast<size_t>(l)]) {
        const size_t fi = static_cast<size_t>(f);
        if (!active_[fi] || frozen_[fi])
          continue;
        frozen_[fi] = 1;
        rate_[fi] = share;
        for (size_t k = first_link_[fi]; k < first_link_[fi + 1]; ++k) {
          const size_t m = static_cast<size_t>(flow_links_[k]);
          cap_left_[m] -= share;
          --unfrozen_[m];
        }
      }
    std::erase_if(open, [&](int32_t l) { return unfrozen_[static_cast<size_t>(l)] == 0; });
  }
  solved_ = true;
  next_end_s_ = -1;
}

} // namespace gputwin::sim
