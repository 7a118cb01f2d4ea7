#pragma once
// Runs decomposed collectives as flows on the SimGrid platform and times them.

#include "gputwin/sim/collective_plan.hpp"
#include "gputwin/sim/flow_log.hpp"
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

// Runs `streams` concurrently from the current simulated time; each stream runs its plans back to back, each
// plan as FlowRunner::run(plan.flows, plan.choice.latency_s).
// REQUIRES: the platform was built from `graph` with routes for flow_pairs() of every plan. Can be called
// again on the same platform. `flow_shortcut` false: every flow through SimGrid's max-min (the reference the
// flow runner's exact shortcut is tested against). `flow_log`: when set, every flow is recorded there (times
// in simulated seconds, tag = the stream's index).
std::vector<std::vector<PlanTiming>>
run_collective_streams(const SimgridPlatform& platform, const topo::ClusterGraph& graph,
                       const std::vector<std::vector<const CollectivePlan*>>& streams, bool flow_shortcut = true,
                       FlowLog* flow_log = nullptr);

} // namespace gputwin::sim
