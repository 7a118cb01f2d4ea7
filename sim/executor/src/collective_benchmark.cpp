#include "gputwin/sim/collective_benchmark.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/nccl_cost.hpp"
#include "gputwin/sim/simgrid_platform.hpp"
#include "gputwin/sim/steady_state.hpp" // shortcuts_enabled
#include "gputwin/sim/stream_alone.hpp"

#include <chrono>

namespace gputwin::sim {

std::vector<int> place_ranks(const topo::ClusterSpec& cluster, int64_t ranks, int64_t per_node)
{
  if (per_node > cluster.gpus_per_node)
    throw InputError("--ranks-per-node: " + std::to_string(per_node) + " is more than the " +
                     std::to_string(cluster.gpus_per_node) + " GPUs of a " + cluster.name + " node");
  const int64_t nodes_needed = (ranks + per_node - 1) / per_node;
  if (nodes_needed > cluster.nodes)
    throw InputError("--ranks: " + std::to_string(ranks) + " ranks at " + std::to_string(per_node) + " per node need " +
                     std::to_string(nodes_needed) + " nodes, but the cluster has " + std::to_string(cluster.nodes) +
                     " (expected at most " + std::to_string(cluster.nodes * per_node) + " ranks, or a larger --nodes)");
  std::vector<int> gpus;
  for (int64_t r = 0; r < ranks; ++r)
    gpus.push_back(static_cast<int>((r / per_node) * cluster.gpus_per_node + r % per_node));
  return gpus;
}

// The plans run back to back in one stream, timed without SimGrid (nothing else is on the network), or on SimGrid
// with `link_report` (the links' load over the run) or GPUTWIN_EXACT.
CollectiveRun run_collective_plans(const topo::ClusterGraph& graph, const std::vector<CollectivePlan>& plans,
                        bool with_link_report)
{
  std::vector<const CollectivePlan*> stream;
  for (const CollectivePlan& p : plans)
    stream.push_back(&p);
  CollectiveRun run;
  const auto wall_start = std::chrono::steady_clock::now();
  if (!with_link_report && shortcuts_enabled()) { // one stream alone: no flow would reach SimGrid (stream_alone.hpp)
    StreamAloneStats stats;
    run.timings = time_stream_alone(graph, stream, &stats);
    run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    run.link_count = stats.links;
    run.route_count = stats.routes;
    return run;
  }
  const SimgridPlatform platform(graph, flow_pairs(stream));
  FlowLog flow_log;
  std::vector<std::vector<PlanTiming>> timings =
      run_collective_streams(platform, graph, {stream}, true, with_link_report ? &flow_log : nullptr);
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  run.timings = std::move(timings[0]);
  run.link_count = platform.link_count();
  run.route_count = platform.route_count();
  if (with_link_report && !run.timings.empty() && run.timings.back().end_s > 0)
    run.links = link_report(graph, flow_log, run.timings.back().end_s);
  return run;
}

// One row per size: its time per call, algbw and busbw (nccl-tests' definitions), and NCCL's choice.
std::vector<CollectiveResultRow> collective_result_rows(const CollectiveRequest& request, int64_t ranks,
                             const std::vector<CollectivePlan>& plans, const std::vector<PlanTiming>& timings)
{
  std::vector<CollectiveResultRow> rows;
  for (size_t i = 0; i < plans.size(); ++i) {
    CollectiveResultRow r;
    r.bytes = request.sizes_bytes[i];
    // nccl-tests times calls issued back to back: the host's issue time bounds each from below.
    r.time_s = nccl_back_to_back_call_s(timings[i].duration_s(), plans[i].host_issue_s);
    r.algbw_gbps = r.time_s > 0 ? static_cast<double>(r.bytes) / r.time_s / 1e9 : 0.0;
    r.busbw_gbps = r.algbw_gbps * bus_bandwidth_factor(request.op, static_cast<int>(ranks));
    r.algorithm = to_string(plans[i].choice.algorithm);
    r.protocol = to_string(plans[i].choice.protocol);
    rows.push_back(r);
  }
  return rows;
}

} // namespace gputwin::sim
