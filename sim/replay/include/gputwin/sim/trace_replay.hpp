#pragma once
// A captured trace (traces/FORMAT.md) replayed unfolded on a cluster, rank r on GPU r: compute ops as measured
// (as_measured.hpp: measured duration plus issue gap, a core's share of them on a shared host) or, re-targeted,
// the compute model's time for their FLOPs, bytes and GEMM shapes; every collective on its own communicator's
// GPUs and every pipeline message as flows (trace_comm_source.hpp). `gputwin replay` and `gputwin compare` run it.
// Runs SimGrid through the program executor: one per process (SimGrid 3.32).

#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/sim/iteration_result.hpp"
#include "gputwin/topologies/cluster_spec.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <optional>

namespace gputwin::sim {

struct TraceReplayOptions {
  std::optional<GpuComputeModel> retarget; // time compute ops with this model instead of their measurements
  double compute_scale = 1;                // as measured: op durations / compute_scale (issue gaps stay)
  IterationOptions iteration;
};

// `cluster` as the trace's machine: on a shared host (host_cores > 0), as many cores as the trace's metadata
// says the machine had (trace_host_cores), unless `keep_cores` (the user set the count). Throws InputError for
// bad host_cores metadata.
topo::ClusterSpec cluster_for_trace(topo::ClusterSpec cluster, const traces::OpGraph& trace, bool keep_cores = false);

// Replays `trace` on `cluster` once. Throws InputError when the trace has more ranks than the cluster has GPUs,
// or, without `retarget`, when a compute op has no measured duration. REQUIRES: check_progress(trace) passed.
IterationResult replay_trace(const traces::OpGraph& trace, const topo::ClusterSpec& cluster,
                             const TraceReplayOptions& options = {});

} // namespace gputwin::sim
