// `gputwin replay`: the flags read into a replay request (sim/replay/replay_file.hpp), the replay run, its report
// and timeline written.
#include "commands.hpp"
#include "gputwin/sim/resource_estimate.hpp"
#include "gputwin/sim/resource_flags.hpp"
#include "gputwin/sim/work_estimate.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/chrome_timeline.hpp"
#include "gputwin/sim/replay_file.hpp"
#include "gputwin/topologies/cluster_flags.hpp"

namespace gputwin::cli {

namespace {

// A positive finite factor flag (--compute-scale, --comm-scale); nullopt when absent.
std::optional<double> scale_flag(const ParsedArgs& parsed, const std::string& flag)
{
  const auto text = parsed.value(flag);
  if (!text)
    return std::nullopt;
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
  sim::add_max_memory_flag(parser);
  parser.add_section("output");
  parser.add_switch("--json", "machine-readable report (with the model, plan and cluster it ran)");
  parser.add_option("--timeline", "FILE", "write a Chrome trace-event timeline (open in ui.perfetto.dev)");
  return parser;
}

// The replay request of the flags, its resource guards those of --max-memory.
sim::ReplayRequest replay_request(const ParsedArgs& parsed)
{
  sim::ReplayRequest request;
  request.trace_path = parsed.positional().front();
  request.cluster = parsed.value("--cluster");
  request.nodes = parsed.integer("--nodes");
  if (request.nodes && (*request.nodes <= 0 || *request.nodes > 1000000))
    throw InputError("--nodes: expected a positive integer, got " + *parsed.value("--nodes"));
  request.cluster_sets = parsed.values("--set");
  request.gpu = parsed.value("--gpu");
  request.gpu_model_path = parsed.value("--gpu-model");
  request.scale = {parsed.integer("--dp"), parsed.integer("--pp"), parsed.integer("--layers"),
                   parsed.integer("--global-batch")};
  request.compute_scale = scale_flag(parsed, "--compute-scale");
  request.comm_scale = scale_flag(parsed, "--comm-scale");
  request.step = parsed.integer("--step");
  request.timeline = parsed.has("--timeline");
  const int64_t limit = sim::max_memory_bytes(parsed);
  request.guards.programs = [&parsed, limit](int64_t gpus, double ops) {
    sim::check_resources(sim::estimate_programs(gpus, ops), limit, parsed, "the replay");
  };
  request.guards.platform = [&parsed, limit](int64_t gpus) {
    sim::check_resources(sim::estimate_platform(gpus), limit, parsed, "the replay");
  };
  request.guards.simulation = [&parsed, limit](const topo::ClusterSpec& cluster, const GptConfig& model,
                                               const ParallelPlan& plan, bool timeline) {
    sim::check_resources(sim::estimate_simulation(cluster, model, plan, {}, true, timeline, limit), limit, parsed,
                    "the replay");
  };
  return request;
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
  const sim::TraceFileReplay replay = sim::replay_trace_file(replay_request(parsed));
  if (const auto file = parsed.value("--timeline"))
    sim::write_chrome_timeline_file(*file, sim::replay_result(replay), sim::replay_ranks_per_program(replay));
  if (parsed.has("--json"))
    sim::write_replay_json(out, replay);
  else
    sim::print_replay(out, replay);
  return 0;
}

} // namespace gputwin::cli
