#include "gputwin/sim/host_issue.hpp"

#include <algorithm>
#include <stdexcept>

namespace gputwin::sim {

HostIssue::HostIssue(const HostProgram* host, size_t ops) : host_(host), issue_s_(ops, 0.0)
{
  if (host_ == nullptr) {
    issued_ = ops;
    return;
  }
  if (host_->issue_cost_s.size() != ops || host_->syncs.size() != ops)
    throw std::logic_error("HostIssue: one issue cost and one sync flag per op expected");
  launch_latency_s_ = host_->launch_latency_s;
}

void HostIssue::issue_to_sync()
{
  const size_t n = issue_s_.size();
  if (waits_ || host_ == nullptr)
    return;
  while (issued_ < n) {
    const size_t i = issued_++;
    free_s_ += host_->issue_cost_s[i];
    issue_s_[i] = free_s_;
    if (host_->syncs[i] && issued_ < n) {
      waits_ = true;
      return;
    }
  }
}

void HostIssue::resume(double ended_s)
{
  free_s_ = std::max(free_s_, ended_s);
  waits_ = false;
}

} // namespace gputwin::sim
