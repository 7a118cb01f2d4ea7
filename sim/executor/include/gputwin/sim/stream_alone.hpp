#pragma once
// One stream of collectives on an otherwise idle network, timed without a SimGrid platform.
//
// With one stream, the flow runner (flow_runner.hpp) never hands a flow to SimGrid: each run()'s flows form flow
// sets (components by shared links) that are alone on their links, and the next run starts only when the last
// flow has arrived and NCCL's latency has passed. The runner's shortcut then times everything itself, and building
// the platform (a host and route per GPU pair; 86% of `collective --op all-to-all --ranks 1024`) buys nothing.
// This is that timing without SimGrid, in the runner's order: each flow's transfer starts after its route's
// latency (in latency order), its component's set is solved again at each start and end (flow_set.hpp), a plan
// ends at its last arrival plus its NCCL latency, the next starts then. Same model, same arithmetic; the clock
// is this loop's double instead of SimGrid's (results agree to ~1e-15 relative).

#include "gputwin/sim/collective_executor.hpp"
#include "gputwin/sim/collective_plan.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <cstddef>
#include <vector>

namespace gputwin::sim {

struct StreamAloneStats {
  size_t links = 0;  // distinct directed links the flows' routes use (what the platform would create)
  size_t routes = 0; // distinct (source, destination) GPU pairs
};

// The plans of `stream` back to back from time 0: each plan's start and end. Throws std::invalid_argument for a
// flow from a GPU to itself, InputError where the graph has no route (as the platform would).
std::vector<PlanTiming> time_stream_alone(const topo::ClusterGraph& graph,
                                          const std::vector<const CollectivePlan*>& stream,
                                          StreamAloneStats* stats = nullptr);

} // namespace gputwin::sim
