#include "gputwin/sim/iteration_estimate.hpp"

#include "gputwin/models/compute_duration_memo.hpp"
#include "gputwin/sim/comm_expansion.hpp"
#include "gputwin/sim/interference.hpp"
#include "gputwin/sim/dag_executor.hpp"
#include "gputwin/sim/steady_state.hpp"
#include "gputwin/sim/straggler_unfolding.hpp"

namespace gputwin::sim {

namespace {

// Every micro-batch of `workload` executed.
IterationResult estimate_whole(const topo::ClusterGraph& graph, const Workload& workload, const GpuComputeModel& gpu,
                               const FrameworkProfile& framework, const IterationOptions& options_in,
                               const RankSpeeds& speeds, DagTiming timing)
{
  const IterationOptions options = with_interference(options_in, gpu); // the GPU's own interference parameters
  const FrameworkProfile host = on_host_cpu(framework, graph.spec().host_issue_scale); // the cluster's CPUs
  std::vector<traces::RankProgram> programs;
  std::vector<HostProgram> hosts;
  for (int64_t stage = 0; stage < workload.plan.pp; ++stage) {
    programs.push_back(stage_program(workload, stage));
    hosts.push_back(host_program(host, programs.back()));
  }
  if (!speeds.empty()) {
    StragglerUnfolding unfolding(graph, workload, speeds); // as simulate_iteration
    ComputeDurationMemo normal_s(gpu);
    const ComputeDuration slowed_s = [&normal_s, &unfolding](size_t p, const traces::Op& op) {
      return normal_s(op) / unfolding.speed_of(p);
    };
    return execute_dag(graph, unfolding.unfold(programs), unfolding.groups(), unfolding, slowed_s,
                       unfolding.per_program(hosts), options, timing);
  }
  CommExpander comm(graph, workload);
  ComputeDurationMemo durations(gpu);
  const ComputeDuration compute_s = [&durations](size_t, const traces::Op& op) { return durations(op); };
  return execute_dag(graph, std::move(programs), workload.groups, comm, compute_s, hosts, options, timing);
}

} // namespace

IterationResult estimate_iteration(const topo::ClusterGraph& graph, const Workload& workload,
                                   const GpuComputeModel& gpu, const FrameworkProfile& framework,
                                   const IterationOptions& options, const RankSpeeds& speeds)
{
  return run_with_steady_state(workload, options, [&](const Workload& w, const IterationOptions& o) {
    return estimate_whole(graph, w, gpu, framework, o, speeds, DagTiming::Settled);
  });
}

double estimate_lower_bound_s(const topo::ClusterGraph& graph, const Workload& workload, const GpuComputeModel& gpu,
                              const FrameworkProfile& framework, const IterationOptions& options)
{
  const IterationResult contention_free =
      run_with_steady_state(workload, options, [&](const Workload& w, const IterationOptions& o) {
        return estimate_whole(graph, w, gpu, framework, o, {}, DagTiming::ContentionFree);
      });
  // The steady state extrapolates to ~1e-12 of the iteration; the estimate's own to as much: 1e-9 covers both.
  return contention_free.iteration_time_s * (1 - 1e-9);
}

} // namespace gputwin::sim
