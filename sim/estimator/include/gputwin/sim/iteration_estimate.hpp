#pragma once
// One training iteration of a generated workload, estimated without SimGrid: the same stage programs,
// compute model, folded communication and host issue model as simulate_iteration (iteration_executor.hpp),
// executed by the DAG executor (dag_executor.hpp: contention-free times, then link sharing between overlapping ops). Any number per process.

#include "gputwin/models/framework_profile.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/models/stragglers.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/executor_interface.hpp"
#include "gputwin/sim/iteration_result.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

namespace gputwin::sim {

// Ranks in `speeds` compute at that fraction of normal speed, unfolded as simulate_iteration does.
IterationResult estimate_iteration(const topo::ClusterGraph& graph, const Workload& workload,
                                   const GpuComputeModel& gpu, const FrameworkProfile& framework,
                                   const IterationOptions& options = {}, const RankSpeeds& speeds = {});

// A lower bound on estimate_iteration's time (no stragglers), at the cost of one pass of the DAG executor instead of
// its settled passes: every op timed alone (DagTiming::ContentionFree), less 1e-9 for the steady state's rounding.
// Within a few per cent of the estimate where interference and link sharing are small.
double estimate_lower_bound_s(const topo::ClusterGraph& graph, const Workload& workload, const GpuComputeModel& gpu,
                              const FrameworkProfile& framework, const IterationOptions& options = {});

// estimate_iteration behind the executor interface.
class EstimateExecutor final : public IterationExecutor {
public:
  const char* name() const override { return "estimate"; }
  IterationResult run(const topo::ClusterGraph& graph, const Workload& workload, const GpuComputeModel& gpu,
                      const FrameworkProfile& framework, const IterationOptions& options,
                      const RankSpeeds& speeds) const override
  {
    return estimate_iteration(graph, workload, gpu, framework, options, speeds);
  }
};

} // namespace gputwin::sim
