#pragma once
// Runs flows on the SimGrid platform, with an exact shortcut for flows that have their links to themselves.
//
// The network model (simgrid_platform.hpp): a flow first waits its route's latency, then transfers its bytes,
// sharing every link of its route max-min fairly with the flows on it. The flows of one run() that share links
// with each other (a connected component, e.g. a ring's hops or an all-to-all's pairs; a single flow alone) form
// a flow set; while the set's links carry nothing else, its max-min rates depend on it alone, and the runner
// times it itself (flow_set.hpp: progressive filling, solved again at each start and end of one of its flows)
// instead of handing it to SimGrid. Whether no other flow will come is not known when it starts, so the shortcut
// is optimistic and repaired exactly: when another flow's transfer starts on a link a set holds, the remaining
// bytes of each of the set's active flows become a SimGrid flow from that instant, and all share the links from
// then on -- the same rates and completion times as if all had been SimGrid flows all along.
//
// Latency is paid by the runner (it waits each flow's route latency before the transfer starts), so SimGrid
// links have none, and SimGrid gives every flow the same weight on a link. (CM02 with link latencies would
// weight a flow's share by the inverse of its route latency -- TCP's RTT unfairness, which InfiniBand's
// credit-based flow control and NVLink do not have.)
//
// All runs of one platform must go through one FlowRunner: it owns the ledger of which link is held by what.
// Only SimGrid actors call run(); SimGrid actors never run concurrently, so the ledger needs no lock.

#include "gputwin/sim/collective_plan.hpp"
#include "gputwin/sim/flow_log.hpp"
#include "gputwin/sim/simgrid_platform.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <cstdint>
#include <memory>
#include <vector>

namespace gputwin::sim {

struct FlowRunnerStats {
  int64_t fast_flows = 0;      // flows that started in a flow set (timed without SimGrid)
  int64_t simgrid_flows = 0;   // flows that started as SimGrid flows (a link was busy)
  int64_t converted_flows = 0; // flow-set flows whose remainder became a SimGrid flow when another flow came
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

  // Call at the end of every actor that called run(): returns once the flows this actor started on behalf of
  // others (remainders of converted flow sets) have ended -- SimGrid cancels an ending actor's activities.
  void settle();

  const FlowRunnerStats& stats() const;

  // Records every flow run from now on into `log` (nullptr: none): its GPUs, bytes, and when its transfer started
  // and ended, whichever way it ran (closed form, SimGrid, or converted). `log` outlives the runs.
  void set_flow_log(FlowLog* log);

  // Test hook: with the shortcut off every flow is a SimGrid flow (the reference the shortcut must equal). Off by
  // default when GPUTWIN_EXACT is set (shortcuts_enabled, steady_state.hpp).
  void set_shortcut(bool enabled);

private:
  struct State; // the ledger and the route cache (SimGrid types stay in the .cpp)
  std::unique_ptr<State> state_;
};

} // namespace gputwin::sim
