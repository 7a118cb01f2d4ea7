#pragma once
// A captured trace's per-layer ops replayed in a larger plan: more data-parallel replicas, more pipeline
// stages, more layers. The trace's rank 0 (a pp = 1 capture holds the whole model) gives, per micro-batch,
// the ops of the embedding, of each layer, and of the output layer, forward and backward (recompute
// included), with their measured durations and TP collectives; the workload generator lays them out in the
// new plan with THE schedule and adds the new pipeline messages and data-parallel reductions. Layer l of
// micro-batch m replays captured layer l mod L of micro-batch m mod M. Plain C++.

#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/topologies/cluster_spec.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <optional>

namespace gputwin::sim {

struct ScaleOut {
  std::optional<int64_t> dp, pp, layers, global_batch; // unset: the trace's (global batch scales with dp)
};

struct TraceWorkload {
  GptConfig model;
  ParallelPlan plan;
  std::shared_ptr<const LayerOpSource> measured; // the captured ops with their measured durations
  std::shared_ptr<const LayerOpSource> modelled; // the same ops without durations (timed by a compute model)

  Workload with_measured_durations() const { return make_workload(model, plan, {}, measured); }
  Workload with_modelled_durations() const { return make_workload(model, plan, {}, modelled); }
};

// Throws InputError naming the flag when the trace cannot be scaled (pp > 1 capture, missing metadata, a plan
// that does not divide).
TraceWorkload make_trace_workload(const traces::OpGraph& trace, const ScaleOut& scale);

// The compute model for ops a trace did not capture (optimizer of a new stage): the built-in model of the
// cluster's GPU, or for a CPU "GPU" a nominal roofline at its peak and bandwidth.
GpuComputeModel template_compute_model(const topo::ClusterSpec& cluster);

} // namespace gputwin::sim
