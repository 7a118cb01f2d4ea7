#pragma once
// The one interface of the two ways to execute an iteration's programs: the SimGrid flow-level executor
// (SimgridExecutor, iteration_executor.hpp: every transfer as flows sharing links; one per process) and the
// estimate (EstimateExecutor, iteration_estimate.hpp: longest paths through the op graph, transfers that overlap
// on a link slowed once; any number per process). Callers that do not care which (sim::run in scenario.hpp,
// the plan search's confirmations) take this.

#include "gputwin/models/framework_profile.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/models/stragglers.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/iteration_result.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

namespace gputwin::sim {

class IterationExecutor {
public:
  virtual ~IterationExecutor() = default;
  // "simgrid" or "estimate".
  virtual const char* name() const = 0;
  // One iteration of `workload` on `graph` (rank r on GPU r), each stage's host issuing its ops as `framework`
  // says; ranks in `speeds` compute at that fraction of normal speed.
  virtual IterationResult run(const topo::ClusterGraph& graph, const Workload& workload, const GpuComputeModel& gpu,
                              const FrameworkProfile& framework, const IterationOptions& options,
                              const RankSpeeds& speeds) const = 0;
};

} // namespace gputwin::sim
