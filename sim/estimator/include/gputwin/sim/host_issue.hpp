#pragma once
// The host of one rank program as both executors run it (models/framework_profile.hpp, "Issue model"): issue
// times follow from the issue costs alone until an op that synchronises the host, so they are given ahead up to
// it; there the host waits until every op issued so far has ended, and goes on from the latest of their ends.
//   issue(i) = free(i-1) + host_cost(i)            free(-1) = 0
//   free(i)  = issue(i), or max(issue(i), end of ops 0..i) when op i synchronises (not the program's last op)
// A caller issues (issue_to_sync), runs the GPU until ops [0, issued()) have ended when waits(), resumes with the
// latest end, and issues again. Plain C++.

#include "gputwin/models/framework_profile.hpp"

#include <cstddef>
#include <vector>

namespace gputwin::sim {

class HostIssue {
public:
  HostIssue() = default;
  // The host `host` of a program of `ops` ops (host.issue_cost_s and host.syncs: one per op). Null: no host,
  // every op issued at 0 and started without a launch latency.
  HostIssue(const HostProgram* host, size_t ops);

  // Gives issue times to the ops from issued() on, up to and including the next synchronising op (or to the end);
  // then waits() says whether the host waits for the GPU. Does nothing while it waits.
  void issue_to_sync();
  // The host waits for ops [0, issued()) to end before it issues more.
  bool waits() const { return waits_; }
  // Ops [0, issued()) have ended, the last at `ended_s`: the host is free again from max(its own time, ended_s).
  void resume(double ended_s);

  size_t issued() const { return issued_; }
  size_t ops() const { return issue_s_.size(); }
  bool done() const { return issued_ == issue_s_.size(); }
  // When op i (< issued()) was issued, and the earliest its stream may start it (issued + launch latency).
  double issue_s(size_t i) const { return issue_s_[i]; }
  double earliest_start_s(size_t i) const { return issue_s_[i] + launch_latency_s_; }
  double launch_latency_s() const { return launch_latency_s_; }

private:
  const HostProgram* host_ = nullptr;
  std::vector<double> issue_s_;
  size_t issued_ = 0; // ops [0, issued_) have an issue time
  double free_s_ = 0; // the host is free to issue the next op from here
  double launch_latency_s_ = 0;
  bool waits_ = false;
};

} // namespace gputwin::sim
