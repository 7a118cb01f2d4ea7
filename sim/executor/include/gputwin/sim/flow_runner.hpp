#pragma once
// Runs flows on the SimGrid platform's clock, timed by the project's own max-min solver.
//
// The network model (simgrid_platform.hpp): a flow first waits its route's latency, then transfers its bytes,
// sharing every link of its route max-min fairly with the flows on it. Every flow goes into one FlowNetwork
// (flow_network.hpp): flows that share links form a component, solved by progressive filling at each start and end of
// one of its flows, and components merge when a new flow joins links of several -- SimGrid's CM02 max-min, without
// SimGrid's per-communication bookkeeping (its CommImpl::finish is quadratic in the flows in flight). A daemon actor
// ("flow-network") sleeps until the network's next end, or until a run's new flows make an earlier one, and wakes
// each run() when its last flow has arrived.
//
// Latency is paid by the runner (it waits each flow's route latency before the transfer starts), so links have
// none, and every flow has the same weight on a link. (CM02 with link latencies would weight a flow's share by the
// inverse of its route latency -- TCP's RTT unfairness, which InfiniBand's credit-based flow control and NVLink do
// not have.)
//
// With the shortcut off (set_shortcut(false), or GPUTWIN_EXACT set) every flow is a SimGrid communication instead:
// the reference the network must equal (tests/sim/flow_set_test.cpp holds them to 1e-9).
//
// All runs of one platform must go through one FlowRunner: it owns the network. Only SimGrid actors call run();
// SimGrid actors never run concurrently, so the network needs no lock.

#include "gputwin/sim/collective_plan.hpp"
#include "gputwin/sim/flow_log.hpp"
#include "gputwin/sim/simgrid_platform.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace gputwin::sim {

struct FlowRunnerStats {
  int64_t fast_flows = 0;    // flows timed by the project's network (FlowNetwork)
  int64_t simgrid_flows = 0; // flows timed by SimGrid (the shortcut off)
};

class FlowRunner {
public:
  // REQUIRES: `platform` was built from `graph`. Both outlive the runner.
  FlowRunner(const SimgridPlatform& platform, const topo::ClusterGraph& graph);
  ~FlowRunner();
  FlowRunner(const FlowRunner&) = delete;
  FlowRunner& operator=(const FlowRunner&) = delete;

  // Runs `flows` from now, from the calling SimGrid actor, and returns when all have arrived plus `latency_s`
  // (NCCL's latency model, paid once after the last flow). REQUIRES: the platform has a route for every flow.
  // With a flow log set, each flow is recorded with `log_tag`.
  void run(const std::vector<Flow>& flows, double latency_s, int64_t log_tag = -1);

  const FlowRunnerStats& stats() const;

  // Records every flow run from now on into `log` (nullptr: none): its GPUs, bytes, and when its transfer started
  // and ended, whichever way it ran (the flow network or SimGrid). `log` outlives the runs.
  void set_flow_log(FlowLog* log);

  // Test hook: with the shortcut off every flow is a SimGrid flow (the reference the network must equal). Off by
  // default when GPUTWIN_EXACT is set (shortcuts_enabled, steady_state.hpp).
  void set_shortcut(bool enabled);

private:
  struct State; // the network, the runs waiting on it and the route cache (SimGrid types stay in the .cpp)
  std::unique_ptr<State> state_;
};

} // namespace gputwin::sim
