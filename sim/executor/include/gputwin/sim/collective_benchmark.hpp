#pragma once
// One NCCL collective benchmarked as nccl-tests does (*_perf): ranks placed on the cluster's nodes, NCCL's plan at each
// size run back to back in one stream, and per size the time per call, algbw and busbw by nccl-tests' definitions.
// Timed without SimGrid when nothing else is on the network (stream_alone.hpp), on SimGrid for a link report or with
// GPUTWIN_EXACT. (No SimGrid headers here.)

#include "gputwin/sim/collective_executor.hpp"
#include "gputwin/sim/collective_plan.hpp"
#include "gputwin/sim/link_report.hpp"
#include "gputwin/topologies/cluster_graph.hpp"
#include "gputwin/traces/collective_op.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gputwin::sim {

// The collective the flags ask for: the op, its sizes, and the algorithm and protocol forced on NCCL.
struct CollectiveRequest {
  CollectiveOp op{};
  std::vector<int64_t> sizes_bytes;
  CollectiveOptions options; // --algo and --proto; gpus_per_thread set once the ranks are placed
};


// Where the ranks are: how many, how many per node, and how many GPUs one host thread launches each call on.
struct CollectivePlacement {
  int64_t ranks = 0;
  int64_t ranks_per_node = 0;
  int64_t gpus_per_thread = 1;
};

struct CollectiveResultRow {
  int64_t bytes = 0;
  double time_s = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  std::string algorithm, protocol;
};

// What SimGrid gave for the plans, one per size, run back to back in one stream.
struct CollectiveRun {
  std::vector<PlanTiming> timings;   // one per plan, in order
  std::optional<LinkReport> links;   // with --link-report, when the run took any time
  size_t link_count = 0, route_count = 0; // the platform's
  double wall_s = 0;                      // the simulation's wall-clock time
};

// Rank r on node r / per_node, local GPU r % per_node: ranks fill nodes in order, as mpirun places them. Throws
// InputError (naming --ranks-per-node or --ranks) when a node or the cluster cannot hold them.
std::vector<int> place_ranks(const topo::ClusterSpec& cluster, int64_t ranks, int64_t per_node);

// The plans run back to back in one stream; `with_link_report`: on SimGrid with the links' load over the run.
CollectiveRun run_collective_plans(const topo::ClusterGraph& graph, const std::vector<CollectivePlan>& plans,
                                   bool with_link_report);

// One row per size: its time per call (at least the host's time to issue one, as calls issued back to back), algbw
// and busbw (nccl-tests' definitions), and NCCL's choice.
std::vector<CollectiveResultRow> collective_result_rows(const CollectiveRequest& request, int64_t ranks,
                                                        const std::vector<CollectivePlan>& plans,
                                                        const std::vector<PlanTiming>& timings);

} // namespace gputwin::sim
