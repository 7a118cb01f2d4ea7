// A gputwin trace replayed as measured, what-if, re-targeted or scaled out (op_graph_replay.hpp).
#include "gputwin/sim/op_graph_replay.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/json_writer.hpp"
#include "gputwin/config/gpu_model_yaml.hpp"
#include "gputwin/models/plan_metadata.hpp"
#include "gputwin/sim/as_measured.hpp"
#include "gputwin/sim/iteration_executor.hpp"
#include "gputwin/sim/report_json.hpp"
#include "gputwin/sim/scenario.hpp"
#include "gputwin/sim/trace_replay.hpp"
#include "gputwin/topologies/cluster_flags.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <limits>

namespace gputwin::sim {

namespace {

GpuComputeModel retarget_model(const std::string& gpu)
{
  const std::string cluster = gpu == "a100" ? "dgx-a100" : gpu == "h100" ? "dgx-h100" : gpu == "h200" ? "dgx-h200" : "";
  if (cluster.empty())
    throw InputError("--gpu: expected a100|h100|h200, got '" + gpu + "'");
  const topo::ClusterSpec spec = topo::load_cluster(cluster, 1, {});
  return builtin_compute_model(spec.gpu.generation, spec.gpu.kind, spec.gpu.peak_bf16_flops, spec.gpu.hbm_bytes_per_s,
                               spec.gpu.peak_fp8_flops, spec.gpu.peak_fp4_flops);
}

// The model and plan a gputwin-engine trace records in its metadata, when it records them all and they are a
// valid run; nullopt otherwise (a hand-written trace: the report then says null).
std::optional<std::pair<GptConfig, ParallelPlan>> captured_run(const traces::OpGraph& trace)
{
  try {
    const PlanMetadata run = read_plan_metadata(trace.metadata, "the trace");
    validate_model(run.model);
    validate_plan(run.model, run.plan);
    return std::make_pair(run.model, run.plan);
  } catch (const InputError&) {
    return std::nullopt;
  }
}

// How a gputwin trace is replayed: the request read and checked against the trace before anything runs.
struct ReplaySetup {
  std::string cluster_name; // --cluster, else localhost for a trace captured on the CPU, else the default
  bool cores_set = false;   // --set gives node.host_cores
};

// `spec` as the machine the trace ran on. On a shared host (localhost) the ranks share as many cores as the trace
// says its machine had, unless --set gives the count; re-targeted to a GPU, every rank has a device of its own and
// shares nothing.
topo::ClusterSpec machine_of_trace(topo::ClusterSpec spec, const OpGraphReplay& replay, const ReplaySetup& setup)
{
  spec = cluster_for_trace(std::move(spec), replay.trace, setup.cores_set);
  if (replay.retarget && topo::gpu_family(replay.retarget->gpu_kind) != "cpu")
    spec.host_cores = 0;
  return spec;
}

// The replay's cluster, compute model and mode from the request; throws InputError for bad values and for flags
// the mode would ignore.
ReplaySetup replay_setup(const ReplayRequest& request, OpGraphReplay& replay)
{
  ReplaySetup setup;
  const auto device = replay.trace.metadata.find("device");
  const bool cpu_trace = device != replay.trace.metadata.end() && device->second == "cpu";
  // A CPU trace replays on the machine it was captured on unless told otherwise.
  setup.cluster_name = request.cluster.value_or(cpu_trace ? "localhost" : topo::default_cluster);
  const topo::ClusterSpec named =
      topo::load_cluster(setup.cluster_name, static_cast<int>(request.nodes.value_or(0)), request.cluster_sets);
  if (request.gpu && request.gpu_model_path)
    throw InputError("--gpu-model: and --gpu both re-target compute (expected one of them)");
  if (request.gpu)
    replay.retarget = retarget_model(*request.gpu);
  if (request.gpu_model_path)
    replay.retarget = config::load_gpu_model_yaml(*request.gpu_model_path);
  setup.cores_set = std::any_of(request.cluster_sets.begin(), request.cluster_sets.end(),
                                [](const std::string& s) { return s.rfind("node.host_cores=", 0) == 0; });
  replay.cluster = machine_of_trace(named, replay, setup);
  const ScaleOut& scale = request.scale;
  replay.scaled = scale.dp || scale.pp || scale.layers;
  // Flags a mode would ignore are errors: an as-measured or re-targeted replay runs the captured batch.
  if (scale.global_batch && !replay.scaled)
    throw InputError("--global-batch: applies to a scaled-out replay (with --dp, --pp or --layers); this replay "
                     "runs the trace's own iteration");
  replay.compute_scale = request.compute_scale.value_or(1);
  if (replay.compute_scale != 1 && (replay.scaled || replay.retarget))
    throw InputError(
        "--compute-scale: applies to an as-measured replay (not with --gpu, --gpu-model, --dp, --pp or --layers)");
  return setup;
}

// The trace's per-layer ops replayed in the larger plan of the request's scale-out, with their captured durations
// or the re-targeted model's, on the cluster sized to the plan's GPUs unless --nodes fixed it.
void replay_scaled_out(const ReplayRequest& request, const ReplaySetup& setup, const IterationOptions& options,
                       OpGraphReplay& replay)
{
  const TraceWorkload tw = make_trace_workload(replay.trace, request.scale);
  topo::ClusterSpec& cluster = replay.cluster;
  const int64_t nodes = nodes_needed(tw.plan, cluster);
  if (tw.plan.gpus() > cluster.gpus()) {
    if (request.nodes)
      throw InputError("--nodes: the scaled plan needs " + std::to_string(tw.plan.gpus()) + " GPUs but " +
                       std::to_string(cluster.gpus()) + " are in the cluster");
    if (request.guards.platform)
      request.guards.platform(nodes * cluster.gpus_per_node);
    if (nodes > std::numeric_limits<int>::max())
      throw InputError("--dp: the scaled plan needs " + std::to_string(tw.plan.gpus()) +
                       " GPUs, more than a cluster can have");
    cluster = machine_of_trace(topo::load_cluster(setup.cluster_name, static_cast<int>(nodes), request.cluster_sets),
                               replay, setup);
  }
  // The analytic workload of the same model and plan stands for the captured layer ops in the estimate.
  if (request.guards.simulation)
    request.guards.simulation(cluster, tw.model, tw.plan, request.timeline);
  replay.run = std::make_pair(tw.model, tw.plan);
  const topo::ClusterGraph graph(cluster);
  const GpuComputeModel model = replay.retarget ? *replay.retarget : template_compute_model(cluster);
  const Workload workload = replay.retarget ? tw.with_modelled_durations() : tw.with_measured_durations();
  replay.result = simulate_iteration(graph, workload, model, options);
  replay.ranks_per_program = tw.plan.tp * tw.plan.cp * tw.plan.dp;
}

// The trace's own iteration replayed, every op as measured (made faster by compute_scale) or re-targeted.
void replay_as_captured(const ReplayRequest& request, const IterationOptions& options, OpGraphReplay& replay)
{
  replay.run = captured_run(replay.trace);
  double ops = 0;
  for (const traces::RankProgram& program : replay.trace.ranks)
    ops += static_cast<double>(program.ops.size());
  if (request.guards.programs)
    request.guards.programs(replay.cluster.gpus(), ops);
  TraceReplayOptions options_of_replay;
  options_of_replay.retarget = replay.retarget;
  options_of_replay.compute_scale = replay.compute_scale;
  options_of_replay.iteration = options;
  replay.result = replay_trace(replay.trace, replay.cluster, options_of_replay);
}

// "model", "plan" (null when the trace does not record them) and "cluster" of a replay's JSON report.
void write_run_json(JsonWriter& json, const OpGraphReplay& replay)
{
  if (replay.run) {
    write_model_json(json, replay.run->first);
    write_plan_json(json, replay.run->second);
  } else {
    json.key("model");
    json.null();
    json.key("plan");
    json.null();
  }
  write_cluster_json(json, replay.cluster);
}

} // namespace

OpGraphReplay replay_op_graph(const ReplayRequest& request, traces::OpGraph trace)
{
  OpGraphReplay replay;
  replay.trace_path = request.trace_path;
  replay.trace = std::move(trace);
  const ReplaySetup setup = replay_setup(request, replay);
  const auto wall_start = std::chrono::steady_clock::now();
  IterationOptions options;
  options.record_timeline = request.timeline;
  if (replay.scaled)
    replay_scaled_out(request, setup, options, replay);
  else
    replay_as_captured(request, options, replay);
  replay.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  // Beside the iteration the trace measured: comparable only for the captured plan, as measured.
  replay.measured_s = measured_iteration_s(replay.trace);
  replay.comparable = !replay.scaled && !replay.retarget && replay.compute_scale == 1 && replay.measured_s > 0;
  replay.relative_error =
      replay.comparable ? (replay.result.iteration_time_s - replay.measured_s) / replay.measured_s : 0;
  return replay;
}

void write_op_graph_replay_json(std::ostream& out, const OpGraphReplay& replay)
{
  const topo::ClusterSpec& cluster = replay.cluster;
  JsonWriter json(out);
  json.begin_object();
  json.field("trace", replay.trace_path);
  write_run_json(json, replay);
  json.field("mode", replay.scaled               ? "scaled"
                     : replay.retarget           ? "retargeted"
                     : replay.compute_scale != 1 ? "what-if"
                                                 : "as-measured");
  if (cluster.host_cores > 0) // the ranks are threads sharing this many cores (sim/README.md, shared hosts)
    json.field("host_cores", static_cast<int64_t>(cluster.host_cores));
  json.field("iteration_time_s", replay.result.iteration_time_s);
  if (replay.measured_s > 0)
    json.field("measured_iteration_time_s", replay.measured_s);
  if (replay.comparable)
    json.field("relative_error", replay.relative_error);
  json.field("simulated_events", replay.result.executed_ops + replay.result.simulated_flows);
  json.field("sim_wall_time_s", replay.wall_s);
  json.end_object();
}

void print_op_graph_replay(std::ostream& out, const OpGraphReplay& replay)
{
  const topo::ClusterSpec& cluster = replay.cluster;
  const auto device = replay.trace.metadata.find("device");
  char line[256];
  std::snprintf(line, sizeof line, "trace      %s (%zu ranks, device %s)\n", replay.trace_path.c_str(),
                replay.trace.ranks.size(), device == replay.trace.metadata.end() ? "?" : device->second.c_str());
  out << line;
  out << "cluster    " << cluster.name
      << (cluster.host_cores > 0 ? " (ranks share " + std::to_string(cluster.host_cores) + " CPU cores)" : "")
      << ", mode "
      << (replay.scaled               ? "scaled out"
          : replay.retarget           ? "re-targeted to " + replay.retarget->gpu_kind
          : replay.compute_scale != 1 ? "what-if: compute x" + std::to_string(replay.compute_scale) + " faster"
                                      : std::string("as measured"))
      << "\n";
  std::snprintf(line, sizeof line, "simulated  %.6f s per iteration\n", replay.result.iteration_time_s);
  out << line;
  if (replay.measured_s > 0) {
    std::snprintf(line, sizeof line, "measured   %.6f s per iteration%s\n", replay.measured_s,
                  replay.comparable ? "" : " (captured plan and device; not comparable with this replay)");
    out << line;
  }
  if (replay.comparable) {
    std::snprintf(line, sizeof line, "error      %+.2f %%\n", 100 * replay.relative_error);
    out << line;
  }
}

} // namespace gputwin::sim
