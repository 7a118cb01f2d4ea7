// A Chakra trace read, checked, executed on the cluster and reported (chakra_file_replay.hpp).
#include "gputwin/sim/chakra_file_replay.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/json_writer.hpp"
#include "gputwin/config/gpu_model_yaml.hpp"
#include "gputwin/sim/chakra_replay.hpp"
#include "gputwin/sim/program_executor.hpp"
#include "gputwin/sim/report_json.hpp"
#include "gputwin/sim/trace_comm_source.hpp"
#include "gputwin/sim/trace_workload.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <chrono>
#include <cstdio>

namespace gputwin::sim {

namespace {

// The GPU the compute ops without a recorded duration are timed on: --gpu-model FILE, --gpu a100|h100|h200,
// else the cluster's GPU.
GpuComputeModel chakra_compute_model(const ReplayRequest& request, const topo::ClusterSpec& cluster)
{
  if (request.gpu && request.gpu_model_path)
    throw InputError("--gpu-model: and --gpu both re-target compute (expected one of them)");
  if (const auto& gpu = request.gpu) {
    const std::string name = *gpu == "a100"   ? "dgx-a100"
                             : *gpu == "h100" ? "dgx-h100"
                             : *gpu == "h200" ? "dgx-h200"
                                              : "";
    if (name.empty())
      throw InputError("--gpu: expected a100|h100|h200, got '" + *gpu + "'");
    return template_compute_model(topo::load_cluster(name, 1, {}));
  }
  const GpuComputeModel fallback = template_compute_model(cluster);
  return request.gpu_model_path ? config::load_gpu_model_yaml(*request.gpu_model_path) : fallback;
}

void write_ignored_json(JsonWriter& json, const chakra::ChakraImportStats& stats)
{
  json.key("ignored");
  json.begin_object();
  for (const auto& [reason, names] : stats.ignored) {
    json.key(reason);
    json.begin_object();
    for (const auto& [name, count] : names)
      json.field(name, count);
    json.end_object();
  }
  json.end_object();
}

// The Chakra trace at `path` (`text`: its content) read and checked; throws InputError naming the file.
chakra::ChakraTrace read_chakra_trace(const std::string& path, const std::string& text)
{
  chakra::ChakraTrace trace;
  try {
    trace =
        chakra::is_pytorch_et_json(text) ? chakra::parse_pytorch_et(text, path) : chakra::read_chakra_et(path, text);
  } catch (const traces::TraceError& e) {
    throw InputError(e.what());
  }
  try {
    check_chakra_graph(trace.graph);
  } catch (const traces::TraceError& e) {
    throw InputError(
        path + ": " + e.what() +
        (trace.input == chakra::ChakraInput::ProtobufEt ? " (is a rank's .et file missing beside it?)" : ""));
  }
  return trace;
}

// The cluster of the request, with as many nodes as the trace's world needs unless --nodes is given.
topo::ClusterSpec chakra_cluster(const ReplayRequest& request, const chakra::ChakraTrace& trace)
{
  const std::string cluster_name = request.cluster.value_or(topo::default_cluster);
  topo::ClusterSpec cluster =
      topo::load_cluster(cluster_name, static_cast<int>(request.nodes.value_or(0)), request.cluster_sets);
  // Every member of every group is a GPU: without --nodes, as many nodes as the trace's world needs.
  if (trace.world_size > cluster.gpus()) {
    if (request.nodes)
      throw InputError("--nodes: the trace's world has " + std::to_string(trace.world_size) + " ranks but '" +
                       cluster.name + "' with " + std::to_string(cluster.nodes) + " node(s) has " +
                       std::to_string(cluster.gpus()) + " GPUs");
    const int64_t nodes = (trace.world_size + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
    cluster = topo::load_cluster(cluster_name, static_cast<int>(nodes), request.cluster_sets);
  }
  return cluster;
}

} // namespace

ChakraFileReplay replay_chakra_file(const ReplayRequest& request, const std::string& text)
{
  const ScaleOut& scale = request.scale;
  const std::pair<const char*, bool> unavailable[] = {{"--dp", scale.dp.has_value()},
                                                      {"--pp", scale.pp.has_value()},
                                                      {"--layers", scale.layers.has_value()},
                                                      {"--global-batch", scale.global_batch.has_value()},
                                                      {"--step", request.step.has_value()},
                                                      {"--comm-scale", request.comm_scale.has_value()},
                                                      {"--compute-scale", request.compute_scale.has_value()}};
  for (const auto& [flag, given] : unavailable)
    if (given)
      throw InputError(std::string(flag) + ": not available for a Chakra execution trace (" + request.trace_path +
                       "; it records no plan to scale and no measured step: use --cluster, --gpu or --gpu-model)");
  ChakraFileReplay replay;
  replay.trace_path = request.trace_path;
  replay.trace = read_chakra_trace(request.trace_path, text);
  replay.cluster = chakra_cluster(request, replay.trace);
  replay.gpu = chakra_compute_model(request, replay.cluster);
  replay.retargeted = request.gpu || request.gpu_model_path;
  for (const traces::RankProgram& program : replay.trace.graph.ranks)
    replay.ops += static_cast<double>(program.ops.size());
  if (request.guards.programs)
    request.guards.programs(replay.cluster.gpus(), replay.ops);

  const auto wall_start = std::chrono::steady_clock::now();
  const topo::ClusterGraph graph(replay.cluster);
  IterationOptions options;
  options.record_timeline = request.timeline;
  const traces::OpGraph& g = replay.trace.graph;
  TraceCommSource comm(replay.cluster, g.groups);
  replay.result = execute_programs(graph, g.ranks, g.groups, comm,
                                   chakra_compute_duration(replay.gpu, !replay.retargeted), options);
  replay.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return replay;
}

void write_chakra_file_replay_json(std::ostream& out, const ChakraFileReplay& replay)
{
  const chakra::ChakraTrace& trace = replay.trace;
  const chakra::ChakraImportStats& s = trace.stats;
  JsonWriter json(out);
  json.begin_object();
  json.field("trace", replay.trace_path);
  json.field("format", chakra::to_string(trace.input));
  json.field("schema", trace.schema);
  json.key("model");
  json.null();
  json.key("plan");
  json.null();
  write_cluster_json(json, replay.cluster);
  json.field("mode", replay.retargeted ? "retargeted" : "as-recorded");
  json.field("compute_model", replay.gpu.gpu_kind);
  json.field("trace_rank", static_cast<int64_t>(trace.rank));
  json.field("world_size", static_cast<int64_t>(trace.world_size));
  json.field("simulated_ranks", static_cast<int64_t>(trace.graph.ranks.size()));
  json.field("nodes", s.nodes);
  json.field("ops", static_cast<int64_t>(replay.ops));
  json.field("compute_ops", s.compute_ops());
  json.field("timed_by_duration", s.timed_by_duration);
  json.field("timed_by_flops", s.timed_by_flops);
  json.field("timed_by_bytes", s.timed_by_bytes);
  json.field("memcpys", s.memcpys);
  json.field("collectives", s.collectives);
  json.field("sends", s.sends);
  json.field("recvs", s.recvs);
  json.field("waits", s.waits);
  json.field("structure_nodes", s.structure);
  json.field("ignored_nodes", s.ignored_nodes());
  json.field("flops", s.flops);
  json.field("collective_bytes", s.collective_bytes);
  write_ignored_json(json, s);
  json.field("iteration_time_s", replay.result.iteration_time_s);
  json.field("simulated_events", replay.result.executed_ops + replay.result.simulated_flows);
  json.field("sim_wall_time_s", replay.wall_s);
  json.end_object();
}

void print_chakra_file_replay(std::ostream& out, const ChakraFileReplay& replay)
{
  const chakra::ChakraTrace& trace = replay.trace;
  const chakra::ChakraImportStats& s = trace.stats;
  char line[512];
  std::snprintf(line, sizeof line, "trace      %s (%s, schema %s, rank %d of %d; %zu rank(s) simulated)\n",
                replay.trace_path.c_str(), chakra::to_string(trace.input).c_str(), trace.schema.c_str(), trace.rank,
                trace.world_size, trace.graph.ranks.size());
  out << line;
  std::snprintf(line, sizeof line,
                "read       %lld nodes: %lld compute ops (%lld by recorded duration, %lld by FLOPs, %lld by bytes; "
                "%lld copies), %lld collectives, %lld sends, %lld recvs, %lld waits\n",
                static_cast<long long>(s.nodes), static_cast<long long>(s.compute_ops()),
                static_cast<long long>(s.timed_by_duration), static_cast<long long>(s.timed_by_flops),
                static_cast<long long>(s.timed_by_bytes), static_cast<long long>(s.memcpys),
                static_cast<long long>(s.collectives), static_cast<long long>(s.sends), static_cast<long long>(s.recvs),
                static_cast<long long>(s.waits));
  out << line;
  for (const auto& [reason, names] : s.ignored) {
    int64_t count = 0;
    std::string examples;
    for (const auto& [name, n] : names) {
      count += n;
      if (examples.size() < 80)
        examples += (examples.empty() ? "" : ", ") + name;
    }
    std::snprintf(line, sizeof line, "ignored    %lld: %s (%s%s)\n", static_cast<long long>(count), reason.c_str(),
                  examples.c_str(), examples.size() >= 80 ? ", ..." : "");
    out << line;
  }
  out << "cluster    " << replay.cluster.name << ", compute timed on " << replay.gpu.gpu_kind
      << (replay.retargeted ? " (re-targeted: recorded durations ignored)" : "") << "\n";
  std::snprintf(line, sizeof line, "simulated  %.6f s per iteration (the trace records no measured time)\n",
                replay.result.iteration_time_s);
  out << line;
}

} // namespace gputwin::sim
