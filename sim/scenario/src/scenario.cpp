#include "gputwin/sim/scenario.hpp"

#include "gputwin/common/byte_text.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <limits>
#include <stdexcept>

namespace gputwin::sim {

int64_t nodes_needed(const ParallelPlan& plan, const topo::ClusterSpec& cluster)
{
  return (plan.gpus() + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
}

topo::ClusterSpec size_cluster(const Scenario& scenario)
{
  const ParallelPlan& plan = scenario.plan;
  if (scenario.cluster.nodes > 0) {
    topo::ClusterSpec cluster = topo::load_cluster(scenario.cluster);
    if (plan.gpus() > cluster.gpus())
      throw InputError("--nodes: the plan needs tp x pp x dp = " + std::to_string(plan.gpus()) + " GPUs but " +
                       std::to_string(cluster.nodes) + " nodes of " + cluster.name + " have " +
                       std::to_string(cluster.gpus()) + " (expected --nodes " +
                       std::to_string(nodes_needed(plan, cluster)) + " or more)");
    return cluster;
  }
  // The GPU and node size first (the file's node count is no constraint), then the cluster at the plan's size.
  const topo::ClusterSpec as_given = topo::load_cluster(scenario.cluster);
  const int64_t nodes = nodes_needed(plan, as_given);
  if (nodes > std::numeric_limits<int>::max())
    throw InputError("--dp: the plan needs tp x pp x dp = " + std::to_string(plan.gpus()) +
                     " GPUs, more nodes than a cluster can have");
  return topo::load_cluster(scenario.cluster, static_cast<int>(nodes));
}

void check_precision_supported(const ParallelPlan& plan, const topo::ClusterSpec& cluster)
{
  const std::string gpu = "the " + cluster.gpu.kind + " of " + cluster.name;
  // MXFP8 and NVFP4 are block-scaled formats of Blackwell's fifth-generation tensor cores (TE's recipe docstring:
  // "'mxfp8' for Blackwell architecture only", Megatron-Core transformer_config.py fp8_recipe; NVFP4BlockScaling
  // "for Blackwell+ architecture", fp4_recipe).
  if (plan.precision == GemmPrecision::Mxfp8 || plan.precision == GemmPrecision::Nvfp4) {
    const std::string flag = "--precision " + to_string(plan.precision);
    if (cluster.gpu.generation != GpuGeneration::Blackwell)
      throw InputError(flag + ": " + gpu + " (generation " + to_string(cluster.gpu.generation) +
                       ") has no block-scaled " + to_string(plan.precision) +
                       " tensor cores (expected a Blackwell GPU: dgx-b200, dgx-b300, gb200-nvl72, gb300-nvl72)");
    if (plan.precision == GemmPrecision::Nvfp4 && !(cluster.gpu.peak_fp4_flops > 0))
      throw InputError(flag + ": " + gpu + " has no FP4 peak (expected a cluster file with gpu.peak_fp4_tflops)");
  }
  if ((plan.precision == GemmPrecision::Fp8 || plan.precision == GemmPrecision::Mxfp8) &&
      !(cluster.gpu.peak_fp8_flops > 0))
    throw InputError((plan.fp8() ? std::string("--fp8") : "--precision mxfp8") + ": " + gpu +
                     " has no FP8 tensor cores (expected an H100, H200 or B200 cluster, or a cluster file with "
                     "gpu.peak_fp8_tflops)");
}

ScenarioCheck validate(const Scenario& scenario, const topo::ClusterSpec& cluster)
{
  const ParallelPlan& plan = scenario.plan;
  check_precision_supported(plan, cluster);
  ScenarioCheck check;
  check.busiest = busiest_stage_memory(scenario.model, plan);
  if (check.busiest.total_bytes > cluster.gpu.hbm_bytes) {
    const std::string need = "pipeline stage " + std::to_string(check.busiest.stage) + " needs " +
                             format_gib(static_cast<double>(check.busiest.total_bytes)) + " per GPU but the " +
                             cluster.gpu.kind + " of " + cluster.name + " has " +
                             format_gib(static_cast<double>(cluster.gpu.hbm_bytes));
    if (!scenario.allow_oom)
      throw InputError("--allow-oom: not given, and the plan does not fit: " + need +
                       " (expected more --tp or --pp, --sp, --recompute selective|full, --zero 1 or a smaller "
                       "--micro-batch; gputwin memory shows where it goes)");
    check.warnings.push_back("the plan does not fit: " + need + "; simulated anyway (--allow-oom)");
  }
  if (const std::optional<std::string> warning = cli::pipeline_fill_warning(plan))
    check.warnings.push_back(*warning);
  if (!scenario.stragglers.empty()) {
    const std::string flag = scenario.stragglers.gpus.empty() ? "--slow-node" : "--slow-gpu";
    if (cluster.host_cores > 0)
      throw InputError(flag + ": the GPUs of " + cluster.name +
                       " are threads sharing host cores (node.host_cores); slow GPUs need devices of their own");
    if (plan.cp > 1)
      throw InputError(flag + ": not with --cp (slow ranks are unfolded over tp, dp and pp only)");
  }
  return check;
}

GpuComputeModel gpu_model_of(const Scenario& scenario, const topo::GpuSpec& gpu)
{
  return scenario.gpu ? *scenario.gpu : builtin_gpu_model(gpu);
}

GpuComputeModel builtin_gpu_model(const topo::GpuSpec& gpu)
{
  try {
    return builtin_compute_model(gpu.generation, gpu.kind, gpu.peak_bf16_flops, gpu.hbm_bytes_per_s,
                                 gpu.peak_fp8_flops, gpu.peak_fp4_flops);
  } catch (const std::invalid_argument&) {
    throw InputError("--gpu-model: the cluster's GPU '" + gpu.kind + "' (generation " + to_string(gpu.generation) +
                     ") has no built-in compute model (expected --gpu-model FILE from gputwin calibrate)");
  }
}

FrameworkProfile framework_of(const Scenario& scenario, const topo::GpuSpec& gpu)
{
  return scenario.framework ? *scenario.framework : builtin_framework_profile(default_framework_for(gpu.generation));
}

ScenarioRun run(const Scenario& scenario, const IterationExecutor& executor, const IterationOptions& options)
{
  ScenarioRun r;
  r.cluster = size_cluster(scenario);
  r.check = validate(scenario, r.cluster);
  const GpuComputeModel gpu = gpu_model_of(scenario, r.cluster.gpu);
  const FrameworkProfile framework = framework_of(scenario, r.cluster.gpu);
  const RankSpeeds speeds = rank_speeds(scenario.stragglers, scenario.plan.gpus(), r.cluster.gpus_per_node);
  r.graph = std::make_shared<const topo::ClusterGraph>(r.cluster);
  const Workload workload =
      make_workload(scenario.model, scenario.plan, with_framework_options(scenario.options, framework));
  r.result = executor.run(*r.graph, workload, gpu, framework, options, speeds);
  r.report = iteration_report(scenario.model, scenario.plan, r.cluster, r.result);
  return r;
}

} // namespace gputwin::sim
