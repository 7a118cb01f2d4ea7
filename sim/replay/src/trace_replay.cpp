#include "gputwin/sim/trace_replay.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/as_measured.hpp"
#include "gputwin/sim/program_executor.hpp"
#include "gputwin/sim/trace_comm_source.hpp"

#include <algorithm>
#include <string>

namespace gputwin::sim {

topo::ClusterSpec cluster_for_trace(topo::ClusterSpec cluster, const traces::OpGraph& trace, bool keep_cores)
{
  if (cluster.host_cores == 0 || keep_cores)
    return cluster;
  try {
    if (const std::optional<int> cores = trace_host_cores(trace))
      cluster.host_cores = *cores;
  } catch (const traces::TraceError& e) {
    throw InputError(e.what());
  }
  return cluster;
}

IterationResult replay_trace(const traces::OpGraph& trace, const topo::ClusterSpec& cluster,
                             const TraceReplayOptions& options)
{
  int32_t max_rank = 0;
  for (const traces::RankProgram& r : trace.ranks)
    max_rank = std::max(max_rank, r.rank);
  if (max_rank >= cluster.gpus())
    throw InputError("--cluster: the trace has ranks up to " + std::to_string(max_rank) + " but '" + cluster.name +
                     "' with " + std::to_string(cluster.nodes) + " node(s) has " + std::to_string(cluster.gpus()) +
                     " GPUs (expected a larger --nodes)");
  const topo::ClusterGraph graph(cluster);
  TraceCommSource comm(cluster, trace.groups);
  const AsMeasuredDurations measured(trace, cluster.host_cores, cluster.nvlink.bytes_per_s);
  const ComputeDuration compute_s = [&options, &measured](size_t p, const traces::Op& op) {
    if (options.retarget)
      return compute_duration_s(*options.retarget, op);
    if (op.duration_ns < 0)
      throw InputError("replay: op '" + op.name + "' has no measured duration (expected --gpu to model it)");
    return measured.seconds(p, op, options.compute_scale);
  };
  return execute_programs(graph, trace.ranks, trace.groups, comm, compute_s, options.iteration);
}

} // namespace gputwin::sim
