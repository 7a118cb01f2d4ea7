#pragma once
// "Simulate this job": a model, a parallel plan with its overlaps, a cluster, the GPU compute model and the host
// (framework) that issues the ops, stragglers -- checked against each other (validate), the cluster sized to the
// plan (size_cluster), executed by either executor and reported (run). Every subcommand that runs an iteration
// parses its flags into a Scenario, and the Python module builds the same; the rules and the figures live here
// once.

#include "gputwin/models/framework_profile.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/parallel_plan.hpp"
#include "gputwin/models/stragglers.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/executor_interface.hpp"
#include "gputwin/sim/iteration_report.hpp"
#include "gputwin/topologies/cluster_graph.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gputwin::sim {

struct Scenario {
  GptConfig model;
  ParallelPlan plan;
  WorkloadOptions options;       // the Megatron-Core overlaps the plan runs with
  topo::ClusterRequest cluster;  // sized to the plan by size_cluster unless it fixes the nodes
  std::optional<GpuComputeModel> gpu;        // none: the built-in model of the cluster's GPU
  std::optional<FrameworkProfile> framework; // none: the default host of the cluster's GPU generation
  Stragglers stragglers;
  bool allow_oom = false; // run a plan whose busiest GPU needs more than the GPU has (a warning, not an error)
};

// What validate found: the busiest stage's memory, and the warnings to state once the run has succeeded.
struct ScenarioCheck {
  StageMemory busiest;
  std::vector<std::string> warnings;
};

// The GPUs' nodes of the plan on `cluster` (whole nodes).
int64_t nodes_needed(const ParallelPlan& plan, const topo::ClusterSpec& cluster);

// The cluster the scenario runs on: the request with as many nodes as the plan needs, or the request's own
// nodes when it fixes them. InputError naming --nodes when they are too few, --dp when the plan needs more nodes
// than a cluster can have.
topo::ClusterSpec size_cluster(const Scenario& scenario);

// InputError naming the flag when the plan's GEMM precision has no tensor cores on the cluster's GPU: --fp8 (and
// --precision mxfp8) without an FP8 peak (an A100); --precision mxfp8|nvfp4 on a GPU that is not a Blackwell;
// --precision nvfp4 without gpu.peak_fp4_tflops.
void check_precision_supported(const ParallelPlan& plan, const topo::ClusterSpec& cluster);

// Every rule between the plan and the cluster (any node count of it): the GEMM precision needs its tensor cores
// (check_precision_supported); the
// busiest GPU fits its memory unless allow_oom (--allow-oom; else a warning); stragglers need GPUs of their own
// (node.host_cores) and no context parallelism. InputError naming the flag; the warnings (a plan that does not
// fit with allow_oom, a pipeline that never fills) returned.
ScenarioCheck validate(const Scenario& scenario, const topo::ClusterSpec& cluster);

// The built-in compute model of `gpu` (by its generation, with its peaks and bandwidth). InputError naming
// --gpu-model when the generation has none.
GpuComputeModel builtin_gpu_model(const topo::GpuSpec& gpu);

// The compute model and host the scenario runs with on `gpu` (its own, else the built-ins for that GPU).
// InputError naming --gpu-model when the GPU's generation has no built-in model.
GpuComputeModel gpu_model_of(const Scenario& scenario, const topo::GpuSpec& gpu);
FrameworkProfile framework_of(const Scenario& scenario, const topo::GpuSpec& gpu);

// One executed iteration of a scenario: the cluster it ran on, what validate found, the executor's result and
// the report.
struct ScenarioRun {
  topo::ClusterSpec cluster;
  std::shared_ptr<const topo::ClusterGraph> graph; // the cluster's graph the run's flows crossed (link reports)
  ScenarioCheck check;
  IterationResult result;
  IterationReport report;
};

// size_cluster, validate, the workload, one iteration on `executor`, the report.
ScenarioRun run(const Scenario& scenario, const IterationExecutor& executor, const IterationOptions& options = {});

} // namespace gputwin::sim
