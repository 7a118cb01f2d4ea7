#include "gputwin/sim/iteration_executor.hpp"

#include "gputwin/models/compute_duration_memo.hpp"
#include "gputwin/sim/comm_expansion.hpp"
#include "gputwin/sim/interference.hpp"
#include "gputwin/sim/isolated_run.hpp"
#include "gputwin/sim/parallel_for.hpp"
#include "gputwin/sim/steady_link_usage.hpp"
#include "gputwin/sim/steady_state.hpp"
#include "gputwin/sim/straggler_unfolding.hpp"

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace gputwin::sim {

namespace {

// Every micro-batch of `workload` executed on SimGrid (once per process).
IterationResult simulate_whole(const topo::ClusterGraph& graph, const Workload& workload, const GpuComputeModel& gpu,
                               const IterationOptions& options_in, const FrameworkProfile& framework,
                               const RankSpeeds& speeds)
{
  const IterationOptions options = with_interference(options_in, gpu); // the GPU's own interference parameters
  const FrameworkProfile host = on_host_cpu(framework, graph.spec().host_issue_scale); // the cluster's CPUs
  // The stage programs are independent (each generated from the workload alone): built on every core, as a
  // thousand-stage plan has millions of ops.
  std::vector<traces::RankProgram> programs(static_cast<size_t>(workload.plan.pp));
  std::vector<HostProgram> hosts(programs.size());
  // Each stage writes only its own result slot: the outcome does not depend on the interleaving.
  const int threads = static_cast<int>(
      std::min<size_t>(programs.size(), std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8)));
  parallel_for(programs.size(), threads, [&](size_t stage) {
    programs[stage] = stage_program(workload, static_cast<int64_t>(stage));
    hosts[stage] = host_program(host, programs[stage]);
  });
  if (!speeds.empty()) {
    // Stragglers: one program per class of ranks that still behave identically, each at its ranks' speed.
    if (graph.spec().host_cores > 0)
      throw std::invalid_argument("simulate_iteration: slow GPUs on a cluster whose GPUs share host cores");
    StragglerUnfolding unfolding(graph, workload, speeds);
    ComputeDurationMemo normal_s(gpu);
    const ComputeDuration slowed_s = [&normal_s, &unfolding](size_t p, const traces::Op& op) {
      return normal_s(op) / unfolding.speed_of(p);
    };
    return execute_programs(graph, unfolding.unfold(programs), unfolding.groups(), unfolding, slowed_s, options,
                            unfolding.per_program(hosts));
  }
  CommExpander comm(graph, workload);
  ComputeDurationMemo durations(gpu);
  const ComputeDuration compute_s = [&durations](size_t, const traces::Op& op) { return durations(op); };
  IterationOptions folded = options; // each stage program stands for the tp x dp ranks of its stage
  folded.ranks_per_program = static_cast<int>(workload.plan.tp * workload.plan.cp * workload.plan.dp);
  return execute_programs(graph, std::move(programs), workload.groups, comm, compute_s, folded, hosts);
}

// simulate_whole, and with IterationOptions::link_usage (and no caller's log) the usage of its flows, logged in
// `log`.
IterationResult simulate_logged(const topo::ClusterGraph& graph, const Workload& workload, const GpuComputeModel& gpu,
                                const IterationOptions& options, const FrameworkProfile& framework,
                                const RankSpeeds& speeds, FlowLog& log)
{
  if (!options.link_usage || options.flow_log != nullptr)
    return simulate_whole(graph, workload, gpu, options, framework, speeds);
  IterationOptions logged = options;
  logged.flow_log = &log; // (with link_usage: no exposed spans)
  IterationResult result = simulate_whole(graph, workload, gpu, logged, framework, speeds);
  result.link_usage = link_usage(graph, log);
  return result;
}

} // namespace

IterationResult simulate_iteration(const topo::ClusterGraph& graph, const Workload& workload,
                                   const GpuComputeModel& gpu, const IterationOptions& options,
                                   const FrameworkProfile& framework, const RankSpeeds& speeds)
{
  // The steady state's sample in a process of its own (SimGrid 3.32: one platform per process, and the whole
  // iteration may follow in this one); its outcome comes back as exact text.
  const SampleRun in_child = [&](const Workload& sampled, const SteadyStateSample& sample) {
    const std::vector<std::string> texts = run_isolated(1, 1, [&](size_t) {
      FlowLog log;
      SampleOutcome outcome = sample_outcome(
          simulate_logged(graph, sampled, gpu, sample_options(options), framework, speeds, log), sample);
      // What a period adds to the link usage, where it repeats (steady_link_usage.hpp).
      if (outcome.result.link_usage && outcome.period && !outcome.growth.empty())
        outcome.link_growth = period_link_usage(graph, log, outcome.result.programs, sample, *outcome.period);
      return to_text(outcome);
    });
    return sample_outcome_from_text(texts.at(0));
  };
  return run_with_steady_state(workload, options, in_child, [&](const Workload& w) {
    FlowLog log;
    return simulate_logged(graph, w, gpu, options, framework, speeds, log);
  });
}

} // namespace gputwin::sim
