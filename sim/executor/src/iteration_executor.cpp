#include "gputwin/sim/iteration_executor.hpp"

#include "gputwin/sim/comm_expansion.hpp"

namespace gputwin::sim {

IterationResult simulate_iteration(const topo::ClusterGraph& graph, const Workload& workload,
                                   const GpuComputeModel& gpu, const IterationOptions& options,
                                   const FrameworkProfile& framework)
{
  std::vector<traces::RankProgram> programs;
  for (int64_t stage = 0; stage < workload.plan.pp; ++stage)
    programs.push_back(stage_program(workload, stage));
  CommExpander comm(graph.spec(), workload);
  const ComputeDuration compute_s = [&gpu](size_t, const traces::Op& op) {
    return op.duration_ns >= 0 ? static_cast<double>(op.duration_ns) * 1e-9 : compute_duration_s(gpu, op);
  };
  std::vector<HostProgram> hosts;
  for (const traces::RankProgram& program : programs)
    hosts.push_back(host_program(framework, program));
  return execute_programs(graph, std::move(programs), workload.groups, comm, compute_s, options, hosts);
}

} // namespace gputwin::sim
