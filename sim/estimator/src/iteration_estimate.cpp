#include "gputwin/sim/iteration_estimate.hpp"

#include "gputwin/sim/comm_expansion.hpp"
#include "gputwin/sim/dag_executor.hpp"

namespace gputwin::sim {

IterationResult estimate_iteration(const topo::ClusterGraph& graph, const Workload& workload,
                                   const GpuComputeModel& gpu, const FrameworkProfile& framework,
                                   const IterationOptions& options)
{
  std::vector<traces::RankProgram> programs;
  std::vector<HostProgram> hosts;
  for (int64_t stage = 0; stage < workload.plan.pp; ++stage) {
    programs.push_back(stage_program(workload, stage));
    hosts.push_back(host_program(framework, programs.back()));
  }
  CommExpander comm(graph.spec(), workload);
  const ComputeDuration compute_s = [&gpu](size_t, const traces::Op& op) {
    return op.duration_ns >= 0 ? static_cast<double>(op.duration_ns) * 1e-9 : compute_duration_s(gpu, op);
  };
  return execute_dag(graph, std::move(programs), workload.groups, comm, compute_s, hosts, options);
}

} // namespace gputwin::sim
