// `gputwin replay`: a captured trace re-simulated on a cluster -- as measured, re-targeted to another GPU, or
// scaled out -- with the simulated iteration time beside the measured one.
#include "chakra_replay.hpp"
#include "commands.hpp"
#include "gputwin/sim/report_json.hpp"
#include "resource_estimate.hpp"
#include "search_core.hpp"
#include "gputwin/sim/chrome_timeline.hpp"

#include "gputwin/chakra/chakra_reader.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/plan_metadata.hpp"
#include "gputwin/sim/as_measured.hpp"
#include "gputwin/sim/iteration_executor.hpp"
#include "gputwin/sim/kineto_replay.hpp"
#include "gputwin/sim/program_executor.hpp"
#include "gputwin/sim/progress_check.hpp"
#include "gputwin/sim/scenario.hpp"
#include "gputwin/sim/trace_replay.hpp"
#include "gputwin/sim/trace_workload.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/common/json_writer.hpp"
#include "gputwin/traces/kineto.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <utility>

namespace gputwin::cli {

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

// A positive finite factor flag (--compute-scale, --comm-scale); 1 when absent.
double scale_flag(const ParsedArgs& parsed, const std::string& flag)
{
  const auto text = parsed.value(flag);
  if (!text)
    return 1;
  double value = 0;
  try {
    value = parse_number(flag, *text); // decimal only: no "0x10", "inf", "nan"
  } catch (const InputError&) {
    value = 0;
  }
  if (value <= 0)
    throw InputError(flag + ": expected a positive number (X times faster), got '" + *text + "'");
  return value;
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

// "model", "plan" (null when the trace does not record them) and "cluster" of a replay's JSON report.
void write_run_json(JsonWriter& json, const std::optional<std::pair<GptConfig, ParallelPlan>>& run,
                    const topo::ClusterSpec& cluster)
{
  if (run) {
    sim::write_model_json(json, run->first);
    sim::write_plan_json(json, run->second);
  } else {
    json.key("model");
    json.null();
    json.key("plan");
    json.null();
  }
  sim::write_cluster_json(json, cluster);
}

// The replay of a Kineto step runs it as measured: neither compute nor network made faster.
bool kineto_as_measured(const sim::KinetoScales& scales)
{
  return scales.compute == 1 && scales.comm == 1;
}

// The JSON report of a Kineto step's replay on `cluster`.
void write_kineto_json(std::ostream& out, const std::string& path, const traces::KinetoTrace& kineto,
                       const topo::ClusterSpec& cluster, const sim::KinetoScales& scales,
                       const sim::IterationResult& result, double wall_s)
{
  const traces::KinetoStep& step = kineto.steps[kineto.selected];
  const double measured_s = kineto.measured_step_s();
  const bool as_measured = kineto_as_measured(scales);
  const double relative_error = (result.iteration_time_s - measured_s) / measured_s;
  JsonWriter json(out);
  json.begin_object();
  json.field("trace", path);
  json.field("format", "pytorch-kineto");
  write_run_json(json, std::nullopt, cluster); // a profiler trace records neither model nor plan
  json.field("mode", as_measured ? "as-measured" : "what-if");
  json.field("step", step.name);
  json.field("steps", static_cast<int64_t>(kineto.steps.size()));
  json.field("trace_rank", static_cast<int64_t>(kineto.trace_rank));
  json.field("world_size", static_cast<int64_t>(kineto.world_size));
  json.field("kernels", kineto.kernels);
  json.field("collectives", kineto.collectives);
  json.field("memcpys", kineto.memcpys);
  json.field("host_syncs", kineto.host_syncs);
  json.field("launch_latency_s", static_cast<double>(kineto.host.launch_latency_ns) * 1e-9);
  json.field("compute_scale", scales.compute);
  json.field("comm_scale", scales.comm);
  json.field("iteration_time_s", result.iteration_time_s);
  json.field("measured_iteration_time_s", measured_s);
  if (as_measured)
    json.field("relative_error", relative_error);
  else
    json.field("speedup_vs_measured", measured_s / result.iteration_time_s);
  json.field("simulated_events", result.executed_ops + result.simulated_flows);
  json.field("sim_wall_time_s", wall_s);
  json.end_object();
}

// The text report of a Kineto step's replay: the step, the mode, simulated beside measured.
void print_kineto_table(std::ostream& out, const std::string& path, const traces::KinetoTrace& kineto,
                        const sim::KinetoScales& scales, const sim::IterationResult& result)
{
  const traces::KinetoStep& step = kineto.steps[kineto.selected];
  const double measured_s = kineto.measured_step_s();
  const bool as_measured = kineto_as_measured(scales);
  const double relative_error = (result.iteration_time_s - measured_s) / measured_s;
  char line[512];
  std::snprintf(line, sizeof line, "trace      %s (PyTorch profiler, rank %d of %d, device %s)\n", path.c_str(),
                kineto.trace_rank, kineto.world_size, kineto.graph.metadata.at("device").c_str());
  out << line;
  std::snprintf(
      line, sizeof line,
      "step       %s (%zu steps in the file): %lld kernels, %lld NCCL collectives, %lld copies, %lld host syncs\n",
      step.name.c_str(), kineto.steps.size(), static_cast<long long>(kineto.kernels),
      static_cast<long long>(kineto.collectives), static_cast<long long>(kineto.memcpys),
      static_cast<long long>(kineto.host_syncs));
  out << line;
  out << "mode       "
      << (as_measured ? std::string("as measured (collectives take their measured duration: rank-local file)")
                      : "what-if: compute x" + std::to_string(scales.compute) + " faster, network x" +
                            std::to_string(scales.comm) + " faster")
      << "\n";
  std::snprintf(line, sizeof line, "simulated  %.6f s per step\n", result.iteration_time_s);
  out << line;
  std::snprintf(line, sizeof line, "measured   %.6f s per step\n", measured_s);
  out << line;
  if (as_measured)
    std::snprintf(line, sizeof line, "error      %+.2f %%\n", 100 * relative_error);
  else
    std::snprintf(line, sizeof line, "speedup    %.3fx over measured\n", measured_s / result.iteration_time_s);
  out << line;
}

// A PyTorch profiler (Kineto) trace: one ProfilerStep replayed as measured (traces/KINETO.md).
int run_kineto_replay(const ParsedArgs& parsed, const std::string& path, const std::string& text, std::ostream& out)
{
  for (const char* flag : {"--gpu", "--gpu-model", "--dp", "--pp", "--layers", "--global-batch"})
    if (parsed.has(flag))
      throw InputError(std::string(flag) + ": not available for a PyTorch profiler trace (" + path +
                       "; its kernels carry no FLOPs or layers: use --compute-scale / --comm-scale)");
  traces::KinetoTrace kineto;
  try {
    kineto = traces::parse_kineto(text, path, parsed.integer("--step"));
    sim::check_progress(kineto.graph);
  } catch (const traces::TraceError& e) {
    throw InputError(e.what());
  }
  sim::KinetoScales scales;
  scales.compute = scale_flag(parsed, "--compute-scale");
  scales.comm = scale_flag(parsed, "--comm-scale");
  const std::string cluster_name = parsed.value("--cluster").value_or(topo::default_cluster);
  const int64_t nodes_flag = parsed.integer("--nodes").value_or(0);
  if (parsed.has("--nodes") && (nodes_flag <= 0 || nodes_flag > 1000000))
    throw InputError("--nodes: expected a positive integer, got " + *parsed.value("--nodes"));
  const topo::ClusterSpec cluster =
      topo::load_cluster(cluster_name, static_cast<int>(nodes_flag), parsed.values("--set"));
  double ops = 0;
  for (const traces::RankProgram& program : kineto.graph.ranks)
    ops += static_cast<double>(program.ops.size());
  check_resources(estimate_programs(cluster.gpus(), ops), max_memory_bytes(parsed), parsed, "the replay");
  const topo::ClusterGraph graph(cluster);

  const auto wall_start = std::chrono::steady_clock::now();
  sim::IterationOptions options;
  options.record_timeline = parsed.has("--timeline");
  sim::KinetoCommSource comm(scales.comm);
  const sim::ComputeDuration compute_s = sim::kineto_compute_duration(scales);
  const sim::IterationResult result = sim::execute_programs(graph, kineto.graph.ranks, kineto.graph.groups, comm,
                                                            compute_s, options, {sim::kineto_host_program(kineto)});
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  if (const auto file = parsed.value("--timeline"))
    sim::write_chrome_timeline_file(*file, result, 1);
  if (parsed.has("--json"))
    write_kineto_json(out, path, kineto, cluster, scales, result, wall_s);
  else
    print_kineto_table(out, path, kineto, scales, result);
  return 0;
}

// The flags of `gputwin replay`.
ArgParser replay_parser()
{
  ArgParser parser("gputwin replay",
                   "Replays a trace captured by gputwin-engine (or any trace in traces/FORMAT.md) on a cluster:\n"
                   "compute ops take their measured durations (or, with --gpu, the GPU compute model's time for\n"
                   "their FLOPs, bytes and GEMM shapes), every collective and pipeline message is re-simulated as\n"
                   "flows on the cluster, and the simulated iteration time is printed beside the measured one.\n"
                   "With --dp/--pp/--layers the trace's per-layer ops are replayed in a larger plan.\n"
                   "A PyTorch profiler (Kineto) trace, FILE.json or FILE.json.gz, replays one ProfilerStep as\n"
                   "measured: the host's launches and syncs at their measured times, every kernel its measured\n"
                   "duration on its stream, every NCCL kernel its own measured duration (traces/KINETO.md).\n"
                   "A Chakra execution trace -- PyTorch host ET JSON, or DIR/<prefix>.<rank>.et with its sibling\n"
                   "rank files -- replays its GPU ops and collectives (traces/chakra/README.md).\n\n"
                   "example: gputwin replay run.trace.json --cluster localhost\n"
                   "example: gputwin replay rank0.json.gz --step 552 --comm-scale 2");
  parser.allow_positional("TRACE", 1);
  topo::add_cluster_flags(parser, std::string("default: localhost for a trace captured on the CPU, else ") +
                                      topo::default_cluster);
  parser.add_section("what-if");
  parser.add_option("--gpu", "a100|h100|h200", "re-target compute to this GPU through the GPU compute model");
  parser.add_option("--gpu-model", "FILE", "re-target compute through a model fitted by gputwin calibrate");
  parser.add_option("--dp", "D", "replay with D data-parallel replicas");
  parser.add_option("--pp", "P", "replay with P pipeline stages (1F1B unless the trace was interleaved)");
  parser.add_option("--layers", "L", "replay with L transformer layers");
  parser.add_option("--global-batch", "B", "global batch of the scaled-out replay (default: the trace's x dp)");
  parser.add_option("--compute-scale", "X", "GPUs X times faster: compute kernel durations / X");
  parser.add_option("--comm-scale", "X", "network X times faster: collective durations / X (Kineto traces)");
  parser.add_section("kineto traces");
  parser.add_option("--step", "N", "replay ProfilerStep#N (default: the step of median duration)");
  parser.add_section("resources");
  add_max_memory_flag(parser);
  parser.add_section("output");
  parser.add_switch("--json", "machine-readable report (with the model, plan and cluster it ran)");
  parser.add_option("--timeline", "FILE", "write a Chrome trace-event timeline (open in ui.perfetto.dev)");
  return parser;
}

// How a gputwin trace is replayed: the flags read and checked against each other before anything runs.
struct ReplaySetup {
  std::string cluster_name;                // --cluster, else localhost for a CPU trace, else the default
  std::vector<std::string> sets;           // --set, kept to size the cluster again for a scaled-out plan
  bool cores_set = false;                  // --set gives node.host_cores
  std::optional<GpuComputeModel> retarget; // --gpu or --gpu-model
  bool scaled = false;                     // --dp, --pp or --layers: the layer ops replayed in a larger plan
  double compute_scale = 1;                // --compute-scale
  topo::ClusterSpec cluster;               // the named cluster as the machine of the trace
};

// `spec` as the machine the trace ran on. On a shared host (localhost) the ranks share as many cores as the trace
// says its machine had, unless --set gives the count; re-targeted to a GPU, every rank has a device of its own and
// shares nothing.
topo::ClusterSpec machine_of_trace(topo::ClusterSpec spec, const traces::OpGraph& trace, const ReplaySetup& setup)
{
  spec = sim::cluster_for_trace(std::move(spec), trace, setup.cores_set);
  if (setup.retarget && gpu_family(setup.retarget->gpu_kind) != "cpu")
    spec.host_cores = 0;
  return spec;
}

// The replay's cluster, compute model and mode from the flags; throws InputError for bad values and for flags the
// mode would ignore.
ReplaySetup replay_setup(const ParsedArgs& parsed, const traces::OpGraph& trace)
{
  ReplaySetup setup;
  const auto device = trace.metadata.find("device");
  const bool cpu_trace = device != trace.metadata.end() && device->second == "cpu";
  // A CPU trace replays on the machine it was captured on unless told otherwise.
  setup.cluster_name = parsed.value("--cluster").value_or(cpu_trace ? "localhost" : topo::default_cluster);
  const int64_t nodes_flag = parsed.integer("--nodes").value_or(0);
  if (parsed.has("--nodes") && (nodes_flag <= 0 || nodes_flag > 1000000))
    throw InputError("--nodes: expected a positive integer, got " + *parsed.value("--nodes"));
  setup.sets = parsed.values("--set");
  const topo::ClusterSpec named = topo::load_cluster(setup.cluster_name, static_cast<int>(nodes_flag), setup.sets);

  if (parsed.has("--gpu") && parsed.has("--gpu-model"))
    throw InputError("--gpu-model: and --gpu both re-target compute (expected one of them)");
  if (const auto gpu = parsed.value("--gpu"))
    setup.retarget = retarget_model(*gpu);
  if (parsed.has("--gpu-model"))
    setup.retarget = compute_model_from_flags(parsed, {});
  setup.cores_set = std::any_of(setup.sets.begin(), setup.sets.end(),
                                [](const std::string& s) { return s.rfind("node.host_cores=", 0) == 0; });
  setup.cluster = machine_of_trace(named, trace, setup);
  setup.scaled = parsed.has("--dp") || parsed.has("--pp") || parsed.has("--layers");
  // Flags a mode would ignore are errors: an as-measured or re-targeted replay runs the captured batch.
  if (parsed.has("--global-batch") && !setup.scaled)
    throw InputError("--global-batch: applies to a scaled-out replay (with --dp, --pp or --layers); this replay "
                     "runs the trace's own iteration");
  setup.compute_scale = scale_flag(parsed, "--compute-scale");
  if (setup.compute_scale != 1 && (setup.scaled || setup.retarget))
    throw InputError(
        "--compute-scale: applies to an as-measured replay (not with --gpu, --gpu-model, --dp, --pp or --layers)");
  return setup;
}

// What the replay of a gputwin trace gave, and where it ran.
struct ReplayOutcome {
  topo::ClusterSpec cluster; // the setup's, sized again for the GPUs of a scaled-out plan
  // The model and plan replayed (the scaled plan when scaled out); nullopt when the trace does not record them.
  std::optional<std::pair<GptConfig, ParallelPlan>> run;
  sim::IterationResult result;
  int64_t ranks_per_program = 1; // ranks each simulated program stands for (for the timeline)
  double wall_s = 0;             // the replay's wall-clock time
};

// The trace's per-layer ops replayed in the larger plan of --dp/--pp/--layers/--global-batch, with their captured
// durations or the re-targeted model's, on the cluster sized to the plan's GPUs unless --nodes fixed it.
ReplayOutcome replay_scaled_out(const ParsedArgs& parsed, const traces::OpGraph& trace, const ReplaySetup& setup,
                                const sim::IterationOptions& options)
{
  sim::ScaleOut scale;
  scale.dp = parsed.integer("--dp");
  scale.pp = parsed.integer("--pp");
  scale.layers = parsed.integer("--layers");
  scale.global_batch = parsed.integer("--global-batch");
  const sim::TraceWorkload tw = sim::make_trace_workload(trace, scale);
  ReplayOutcome outcome;
  outcome.cluster = setup.cluster;
  topo::ClusterSpec& cluster = outcome.cluster;
  const int64_t nodes = sim::nodes_needed(tw.plan, cluster);
  const int64_t limit = max_memory_bytes(parsed);
  if (tw.plan.gpus() > cluster.gpus()) {
    if (parsed.has("--nodes"))
      throw InputError("--nodes: the scaled plan needs " + std::to_string(tw.plan.gpus()) + " GPUs but " +
                       std::to_string(cluster.gpus()) + " are in the cluster");
    check_resources(estimate_platform(nodes * cluster.gpus_per_node), limit, parsed, "the replay");
    if (nodes > std::numeric_limits<int>::max())
      throw InputError("--dp: the scaled plan needs " + std::to_string(tw.plan.gpus()) +
                       " GPUs, more than a cluster can have");
    cluster =
        machine_of_trace(topo::load_cluster(setup.cluster_name, static_cast<int>(nodes), setup.sets), trace, setup);
  }
  // The analytic workload of the same model and plan stands for the captured layer ops in the estimate.
  check_resources(estimate_simulation(cluster, tw.model, tw.plan, {}, true, parsed.has("--timeline"), limit), limit,
                  parsed, "the replay");
  outcome.run = std::make_pair(tw.model, tw.plan);
  const topo::ClusterGraph graph(cluster);
  const GpuComputeModel model = setup.retarget ? *setup.retarget : sim::template_compute_model(cluster);
  const Workload workload = setup.retarget ? tw.with_modelled_durations() : tw.with_measured_durations();
  outcome.result = sim::simulate_iteration(graph, workload, model, options);
  outcome.ranks_per_program = tw.plan.tp * tw.plan.cp * tw.plan.dp;
  return outcome;
}

// The trace's own iteration replayed, every op as measured (made faster by --compute-scale) or re-targeted.
ReplayOutcome replay_as_captured(const ParsedArgs& parsed, const traces::OpGraph& trace, const ReplaySetup& setup,
                                 const sim::IterationOptions& options)
{
  ReplayOutcome outcome;
  outcome.cluster = setup.cluster;
  outcome.run = captured_run(trace);
  double ops = 0;
  for (const traces::RankProgram& program : trace.ranks)
    ops += static_cast<double>(program.ops.size());
  check_resources(estimate_programs(outcome.cluster.gpus(), ops), max_memory_bytes(parsed), parsed, "the replay");
  sim::TraceReplayOptions replay;
  replay.retarget = setup.retarget;
  replay.compute_scale = setup.compute_scale;
  replay.iteration = options;
  outcome.result = sim::replay_trace(trace, outcome.cluster, replay);
  return outcome;
}

// The gputwin trace replayed as `setup` says, timed on the wall clock.
ReplayOutcome replay_gputwin_trace(const ParsedArgs& parsed, const traces::OpGraph& trace, const ReplaySetup& setup)
{
  const auto wall_start = std::chrono::steady_clock::now();
  sim::IterationOptions options;
  options.record_timeline = parsed.has("--timeline");
  ReplayOutcome outcome = setup.scaled ? replay_scaled_out(parsed, trace, setup, options)
                                       : replay_as_captured(parsed, trace, setup, options);
  outcome.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return outcome;
}

// The replay beside the iteration the trace measured: comparable only for the captured plan, as measured.
struct Comparison {
  double measured_s = 0;     // the trace's measured iteration time; 0 when it records none
  bool comparable = false;   // the replay runs the captured plan with the captured durations
  double relative_error = 0; // (simulated - measured) / measured when comparable, else 0
};

Comparison compare_with_measured(const traces::OpGraph& trace, const ReplaySetup& setup,
                                 const sim::IterationResult& result)
{
  Comparison c;
  c.measured_s = sim::measured_iteration_s(trace);
  c.comparable = !setup.scaled && !setup.retarget && setup.compute_scale == 1 && c.measured_s > 0;
  c.relative_error = c.comparable ? (result.iteration_time_s - c.measured_s) / c.measured_s : 0;
  return c;
}

// The JSON report of a gputwin trace's replay: the run, the mode, simulated beside measured.
void write_replay_json(std::ostream& out, const std::string& path, const ReplaySetup& setup,
                       const ReplayOutcome& outcome, const Comparison& c)
{
  const topo::ClusterSpec& cluster = outcome.cluster;
  JsonWriter json(out);
  json.begin_object();
  json.field("trace", path);
  write_run_json(json, outcome.run, cluster);
  json.field("mode", setup.scaled               ? "scaled"
                     : setup.retarget           ? "retargeted"
                     : setup.compute_scale != 1 ? "what-if"
                                                : "as-measured");
  if (cluster.host_cores > 0) // the ranks are threads sharing this many cores (sim/README.md, shared hosts)
    json.field("host_cores", static_cast<int64_t>(cluster.host_cores));
  json.field("iteration_time_s", outcome.result.iteration_time_s);
  if (c.measured_s > 0)
    json.field("measured_iteration_time_s", c.measured_s);
  if (c.comparable)
    json.field("relative_error", c.relative_error);
  json.field("simulated_events", outcome.result.executed_ops + outcome.result.simulated_flows);
  json.field("sim_wall_time_s", outcome.wall_s);
  json.end_object();
}

// The text report of a gputwin trace's replay: the trace, the cluster and mode, simulated beside measured.
void print_replay_table(std::ostream& out, const std::string& path, const traces::OpGraph& trace,
                        const ReplaySetup& setup, const ReplayOutcome& outcome, const Comparison& c)
{
  const topo::ClusterSpec& cluster = outcome.cluster;
  const auto device = trace.metadata.find("device");
  char line[256];
  std::snprintf(line, sizeof line, "trace      %s (%zu ranks, device %s)\n", path.c_str(), trace.ranks.size(),
                device == trace.metadata.end() ? "?" : device->second.c_str());
  out << line;
  out << "cluster    " << cluster.name
      << (cluster.host_cores > 0 ? " (ranks share " + std::to_string(cluster.host_cores) + " CPU cores)" : "")
      << ", mode "
      << (setup.scaled               ? "scaled out"
          : setup.retarget           ? "re-targeted to " + setup.retarget->gpu_kind
          : setup.compute_scale != 1 ? "what-if: compute x" + std::to_string(setup.compute_scale) + " faster"
                                     : std::string("as measured"))
      << "\n";
  std::snprintf(line, sizeof line, "simulated  %.6f s per iteration\n", outcome.result.iteration_time_s);
  out << line;
  if (c.measured_s > 0) {
    std::snprintf(line, sizeof line, "measured   %.6f s per iteration%s\n", c.measured_s,
                  c.comparable ? "" : " (captured plan and device; not comparable with this replay)");
    out << line;
  }
  if (c.comparable) {
    std::snprintf(line, sizeof line, "error      %+.2f %%\n", 100 * c.relative_error);
    out << line;
  }
}

} // namespace

int run_replay(const std::vector<std::string>& args, std::ostream& out)
{
  ArgParser parser = replay_parser();
  const ParsedArgs parsed = parser.parse(args);
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  if (parsed.positional().empty())
    throw InputError("replay: expected a trace file (gputwin replay TRACE --cluster C)");
  check_output_flags(parsed, {"--timeline"}); // before the replay: a typo fails at once
  const std::string path = parsed.positional().front();
  traces::OpGraph trace;
  try {
    const std::string text = traces::read_trace_text(path);
    if (traces::is_chrome_trace(text))
      return run_kineto_replay(parsed, path, text, out);
    if (chakra::is_pytorch_et_json(text) || chakra::is_chakra_et_path(path)) // traces/chakra/README.md, "Import"
      return run_chakra_replay(parsed, path, text, out);
    for (const char* flag : {"--step", "--comm-scale"})
      if (parsed.has(flag))
        throw InputError(std::string(flag) + ": only for PyTorch profiler (Kineto) traces; " + path +
                         " is a gputwin trace");
    trace = traces::parse_op_graph(text, path);
    sim::check_progress(trace);
  } catch (const traces::TraceError& e) {
    throw InputError(e.what());
  }
  const ReplaySetup setup = replay_setup(parsed, trace);
  const ReplayOutcome outcome = replay_gputwin_trace(parsed, trace, setup);
  const Comparison comparison = compare_with_measured(trace, setup, outcome.result);
  if (const auto file = parsed.value("--timeline"))
    sim::write_chrome_timeline_file(*file, outcome.result, outcome.ranks_per_program);
  if (parsed.has("--json"))
    write_replay_json(out, path, setup, outcome, comparison);
  else
    print_replay_table(out, path, trace, setup, outcome, comparison);
  return 0;
}

} // namespace gputwin::cli
