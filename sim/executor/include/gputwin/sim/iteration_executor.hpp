#pragma once
// One training iteration of a generated workload on a simulated cluster: the stage programs of
// make_workload(), compute timed by the GPU compute model, communication folded (comm_expansion.hpp).

#include "gputwin/models/framework_profile.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/models/stragglers.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/executor_interface.hpp"
#include "gputwin/sim/program_executor.hpp"

namespace gputwin::sim {

// Simulates one iteration of `workload` on `graph` (rank r on GPU r). A compute op with a measured duration
// (duration_ns >= 0, e.g. copied from a trace) takes it; the others take the compute model's time. Each stage's
// host issues its ops as `framework` says (framework_profile.hpp). Ranks in `speeds` compute at that fraction of
// normal speed: the stages they break are unfolded into one program per class of identical ranks
// (straggler_unfolding.hpp; IterationResult::programs then lists those). One per process (SimGrid 3.32).
IterationResult simulate_iteration(const topo::ClusterGraph& graph, const Workload& workload,
                                   const GpuComputeModel& gpu, const IterationOptions& options = {},
                                   const FrameworkProfile& framework = builtin_framework_profile("none"),
                                   const RankSpeeds& speeds = {});

// simulate_iteration behind the executor interface (one run per process: run_isolated for more).
class SimgridExecutor final : public IterationExecutor {
public:
  const char* name() const override { return "simgrid"; }
  IterationResult run(const topo::ClusterGraph& graph, const Workload& workload, const GpuComputeModel& gpu,
                      const FrameworkProfile& framework, const IterationOptions& options,
                      const RankSpeeds& speeds) const override
  {
    return simulate_iteration(graph, workload, gpu, options, framework, speeds);
  }
};

} // namespace gputwin::sim
