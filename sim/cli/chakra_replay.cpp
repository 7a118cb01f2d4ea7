// `gputwin replay` of a Chakra trace: read (traces/chakra), check (sim/replay/chakra_replay), execute on the
// cluster with every collective as flows, report what was timed how and what was ignored.
#include "chakra_replay.hpp"

#include "commands.hpp"
#include "gputwin/sim/report_json.hpp"
#include "resource_estimate.hpp"
#include "gputwin/sim/chrome_timeline.hpp"

#include "gputwin/chakra/chakra_reader.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/chakra_replay.hpp"
#include "gputwin/sim/program_executor.hpp"
#include "gputwin/sim/trace_comm_source.hpp"
#include "gputwin/sim/trace_workload.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/common/json_writer.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <chrono>
#include <cstdio>

namespace gputwin::cli {

namespace {

// The GPU the compute ops without a recorded duration are timed on: --gpu-model FILE, --gpu a100|h100|h200,
// else the cluster's GPU.
GpuComputeModel chakra_compute_model(const ParsedArgs& parsed, const topo::ClusterSpec& cluster)
{
  if (parsed.has("--gpu") && parsed.has("--gpu-model"))
    throw InputError("--gpu-model: and --gpu both re-target compute (expected one of them)");
  if (const auto gpu = parsed.value("--gpu")) {
    const std::string name = *gpu == "a100"   ? "dgx-a100"
                             : *gpu == "h100" ? "dgx-h100"
                             : *gpu == "h200" ? "dgx-h200"
                                              : "";
    if (name.empty())
      throw InputError("--gpu: expected a100|h100|h200, got '" + *gpu + "'");
    return sim::template_compute_model(topo::load_cluster(name, 1, {}));
  }
  const GpuComputeModel fallback = sim::template_compute_model(cluster);
  return parsed.has("--gpu-model") ? compute_model_from_flags(parsed, fallback) : fallback;
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
    sim::check_chakra_graph(trace.graph);
  } catch (const traces::TraceError& e) {
    throw InputError(
        path + ": " + e.what() +
        (trace.input == chakra::ChakraInput::ProtobufEt ? " (is a rank's .et file missing beside it?)" : ""));
  }
  return trace;
}

// The cluster of --cluster, --nodes and --set, with as many nodes as the trace's world needs unless --nodes is given.
topo::ClusterSpec chakra_cluster(const ParsedArgs& parsed, const chakra::ChakraTrace& trace)
{
  const std::string cluster_name = parsed.value("--cluster").value_or(topo::default_cluster);
  const int64_t nodes_flag = parsed.integer("--nodes").value_or(0);
  if (parsed.has("--nodes") && (nodes_flag <= 0 || nodes_flag > 1000000))
    throw InputError("--nodes: expected a positive integer, got " + *parsed.value("--nodes"));
  topo::ClusterSpec cluster = topo::load_cluster(cluster_name, static_cast<int>(nodes_flag), parsed.values("--set"));
  // Every member of every group is a GPU: without --nodes, as many nodes as the trace's world needs.
  if (trace.world_size > cluster.gpus()) {
    if (parsed.has("--nodes"))
      throw InputError("--nodes: the trace's world has " + std::to_string(trace.world_size) + " ranks but '" +
                       cluster.name + "' with " + std::to_string(cluster.nodes) + " node(s) has " +
                       std::to_string(cluster.gpus()) + " GPUs");
    const int64_t nodes = (trace.world_size + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
    cluster = topo::load_cluster(cluster_name, static_cast<int>(nodes), parsed.values("--set"));
  }
  return cluster;
}

// A Chakra trace's replay: where and how it ran, and what it gave.
struct ChakraReplay {
  topo::ClusterSpec cluster;
  GpuComputeModel gpu;     // what compute ops without a recorded duration are timed on
  bool retargeted = false; // --gpu or --gpu-model: recorded durations ignored
  double ops = 0;          // ops of every simulated rank
  sim::IterationResult result;
  double wall_s = 0; // the replay's wall-clock time
};

// The JSON report: the trace, what was read and how each op was timed, what was ignored, the iteration time.
void write_chakra_json(std::ostream& out, const std::string& path, const chakra::ChakraTrace& trace,
                       const ChakraReplay& replay)
{
  const chakra::ChakraImportStats& s = trace.stats;
  JsonWriter json(out);
  json.begin_object();
  json.field("trace", path);
  json.field("format", chakra::to_string(trace.input));
  json.field("schema", trace.schema);
  json.key("model");
  json.null();
  json.key("plan");
  json.null();
  sim::write_cluster_json(json, replay.cluster);
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

// The text report: the trace, what was read and how each op was timed, each reason nodes were ignored (with a few
// of their names), the cluster and compute model, the iteration time.
void print_chakra_table(std::ostream& out, const std::string& path, const chakra::ChakraTrace& trace,
                        const ChakraReplay& replay)
{
  const chakra::ChakraImportStats& s = trace.stats;
  char line[512];
  std::snprintf(line, sizeof line, "trace      %s (%s, schema %s, rank %d of %d; %zu rank(s) simulated)\n",
                path.c_str(), chakra::to_string(trace.input).c_str(), trace.schema.c_str(), trace.rank,
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

} // namespace

int run_chakra_replay(const ParsedArgs& parsed, const std::string& path, const std::string& text, std::ostream& out)
{
  for (const char* flag : {"--dp", "--pp", "--layers", "--global-batch", "--step", "--comm-scale", "--compute-scale"})
    if (parsed.has(flag))
      throw InputError(std::string(flag) + ": not available for a Chakra execution trace (" + path +
                       "; it records no plan to scale and no measured step: use --cluster, --gpu or --gpu-model)");
  const chakra::ChakraTrace trace = read_chakra_trace(path, text);
  ChakraReplay replay;
  replay.cluster = chakra_cluster(parsed, trace);
  replay.gpu = chakra_compute_model(parsed, replay.cluster);
  replay.retargeted = parsed.has("--gpu") || parsed.has("--gpu-model");
  for (const traces::RankProgram& program : trace.graph.ranks)
    replay.ops += static_cast<double>(program.ops.size());
  check_resources(estimate_programs(replay.cluster.gpus(), replay.ops), max_memory_bytes(parsed), parsed, "the replay");

  const auto wall_start = std::chrono::steady_clock::now();
  const topo::ClusterGraph graph(replay.cluster);
  sim::IterationOptions options;
  options.record_timeline = parsed.has("--timeline");
  sim::TraceCommSource comm(replay.cluster, trace.graph.groups);
  replay.result = sim::execute_programs(graph, trace.graph.ranks, trace.graph.groups, comm,
                                        sim::chakra_compute_duration(replay.gpu, !replay.retargeted), options);
  replay.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (const auto file = parsed.value("--timeline"))
    sim::write_chrome_timeline_file(*file, replay.result, 1);
  if (parsed.has("--json"))
    write_chakra_json(out, path, trace, replay);
  else
    print_chakra_table(out, path, trace, replay);
  return 0;
}

} // namespace gputwin::cli
