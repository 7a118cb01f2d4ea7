// One Kineto ProfilerStep replayed on a cluster, and its report (kineto_step_replay.hpp).
#include "gputwin/sim/kineto_step_replay.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/json_writer.hpp"
#include "gputwin/sim/program_executor.hpp"
#include "gputwin/sim/progress_check.hpp"
#include "gputwin/sim/report_json.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <chrono>
#include <cstdio>

namespace gputwin::sim {

double KinetoStepReplay::relative_error() const
{
  const double measured_s = kineto.measured_step_s();
  return (result.iteration_time_s - measured_s) / measured_s;
}

KinetoStepReplay replay_kineto_step(const ReplayRequest& request, const std::string& text)
{
  const std::string& path = request.trace_path;
  const ScaleOut& scale = request.scale;
  const std::pair<const char*, bool> unavailable[] = {
      {"--gpu", request.gpu.has_value()},     {"--gpu-model", request.gpu_model_path.has_value()},
      {"--dp", scale.dp.has_value()},         {"--pp", scale.pp.has_value()},
      {"--layers", scale.layers.has_value()}, {"--global-batch", scale.global_batch.has_value()}};
  for (const auto& [flag, given] : unavailable)
    if (given)
      throw InputError(std::string(flag) + ": not available for a PyTorch profiler trace (" + path +
                       "; its kernels carry no FLOPs or layers: use --compute-scale / --comm-scale)");
  KinetoStepReplay replay;
  replay.trace_path = path;
  try {
    replay.kineto = traces::parse_kineto(text, path, request.step);
    check_progress(replay.kineto.graph);
  } catch (const traces::TraceError& e) {
    throw InputError(e.what());
  }
  replay.scales.compute = request.compute_scale.value_or(1);
  replay.scales.comm = request.comm_scale.value_or(1);
  replay.cluster = topo::load_cluster(request.cluster.value_or(topo::default_cluster),
                                      static_cast<int>(request.nodes.value_or(0)), request.cluster_sets);
  double ops = 0;
  for (const traces::RankProgram& program : replay.kineto.graph.ranks)
    ops += static_cast<double>(program.ops.size());
  if (request.guards.programs)
    request.guards.programs(replay.cluster.gpus(), ops);
  const topo::ClusterGraph graph(replay.cluster);

  const auto wall_start = std::chrono::steady_clock::now();
  IterationOptions options;
  options.record_timeline = request.timeline;
  KinetoCommSource comm(replay.scales.comm);
  const ComputeDuration compute_s = kineto_compute_duration(replay.scales);
  replay.result = execute_programs(graph, replay.kineto.graph.ranks, replay.kineto.graph.groups, comm, compute_s,
                                   options, {kineto_host_program(replay.kineto)});
  replay.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return replay;
}

void write_kineto_step_replay_json(std::ostream& out, const KinetoStepReplay& replay)
{
  const traces::KinetoTrace& kineto = replay.kineto;
  const traces::KinetoStep& step = kineto.steps[kineto.selected];
  const double measured_s = kineto.measured_step_s();
  JsonWriter json(out);
  json.begin_object();
  json.field("trace", replay.trace_path);
  json.field("format", "pytorch-kineto");
  json.key("model"); // a profiler trace records neither model nor plan
  json.null();
  json.key("plan");
  json.null();
  write_cluster_json(json, replay.cluster);
  json.field("mode", replay.as_measured() ? "as-measured" : "what-if");
  json.field("step", step.name);
  json.field("steps", static_cast<int64_t>(kineto.steps.size()));
  json.field("trace_rank", static_cast<int64_t>(kineto.trace_rank));
  json.field("world_size", static_cast<int64_t>(kineto.world_size));
  json.field("kernels", kineto.kernels);
  json.field("collectives", kineto.collectives);
  json.field("memcpys", kineto.memcpys);
  json.field("host_syncs", kineto.host_syncs);
  json.field("launch_latency_s", static_cast<double>(kineto.host.launch_latency_ns) * 1e-9);
  json.field("compute_scale", replay.scales.compute);
  json.field("comm_scale", replay.scales.comm);
  json.field("iteration_time_s", replay.result.iteration_time_s);
  json.field("measured_iteration_time_s", measured_s);
  if (replay.as_measured())
    json.field("relative_error", replay.relative_error());
  else
    json.field("speedup_vs_measured", measured_s / replay.result.iteration_time_s);
  json.field("simulated_events", replay.result.executed_ops + replay.result.simulated_flows);
  json.field("sim_wall_time_s", replay.wall_s);
  json.end_object();
}

void print_kineto_step_replay(std::ostream& out, const KinetoStepReplay& replay)
{
  const traces::KinetoTrace& kineto = replay.kineto;
  const traces::KinetoStep& step = kineto.steps[kineto.selected];
  const double measured_s = kineto.measured_step_s();
  char line[512];
  std::snprintf(line, sizeof line, "trace      %s (PyTorch profiler, rank %d of %d, device %s)\n",
                replay.trace_path.c_str(), kineto.trace_rank, kineto.world_size,
                kineto.graph.metadata.at("device").c_str());
  out << line;
  std::snprintf(
      line, sizeof line,
      "step       %s (%zu steps in the file): %lld kernels, %lld NCCL collectives, %lld copies, %lld host syncs\n",
      step.name.c_str(), kineto.steps.size(), static_cast<long long>(kineto.kernels),
      static_cast<long long>(kineto.collectives), static_cast<long long>(kineto.memcpys),
      static_cast<long long>(kineto.host_syncs));
  out << line;
  out << "mode       "
      << (replay.as_measured() ? std::string("as measured (collectives take their measured duration: rank-local file)")
                               : "what-if: compute x" + std::to_string(replay.scales.compute) + " faster, network x" +
                                     std::to_string(replay.scales.comm) + " faster")
      << "\n";
  std::snprintf(line, sizeof line, "simulated  %.6f s per step\n", replay.result.iteration_time_s);
  out << line;
  std::snprintf(line, sizeof line, "measured   %.6f s per step\n", measured_s);
  out << line;
  if (replay.as_measured())
    std::snprintf(line, sizeof line, "error      %+.2f %%\n", 100 * replay.relative_error());
  else
    std::snprintf(line, sizeof line, "speedup    %.3fx over measured\n", measured_s / replay.result.iteration_time_s);
  out << line;
}

} // namespace gputwin::sim
