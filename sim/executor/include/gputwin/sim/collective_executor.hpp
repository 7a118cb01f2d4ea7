#pragma once
// Runs decomposed collectives as flows on the SimGrid platform and times them.

#include "gputwin/sim/collective_plan.hpp"
#include "gputwin/sim/simgrid_platform.hpp"

#include <utility>
#include <vector>

namespace gputwin::sim {

struct PlanTiming {
  double start_s = 0; // relative to the start of the run
  double end_s = 0;
  double duration_s() const { return end_s - start_s; }
};

// Every ordered GPU pair the flows of `plans` use: what the platform needs routes for.
std::vector<std::pair<int, int>> flow_pairs(const std::vector<const CollectivePlan*>& plans);

// Runs `flows` from now, from the calling SimGrid actor, and returns when they have completed: all flows start
// at once (each paying its route's latency once and sharing link bandwidth max-min), and `latency_s` (NCCL's
// latency model) is paid after the last one arrives.
void run_flows_now(const SimgridPlatform& platform, const std::vector<Flow>& flows, double latency_s);

// Runs `streams` concurrently from the current simulated time; each stream runs its plans back to back, each
// plan as run_flows_now(plan.flows, plan.choice.latency_s).
// REQUIRES: the platform has routes for flow_pairs() of every plan. Can be called again on the same platform.
std::vector<std::vector<PlanTiming>>
run_collective_streams(const SimgridPlatform& platform, const std::vector<std::vector<const CollectivePlan*>>& streams);

} // namespace gputwin::sim
