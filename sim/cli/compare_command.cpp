// `gputwin compare`: the flags read into a comparison request (sim/replay/trace_comparison.hpp), the comparison
// run and printed.
#include "commands.hpp"
#include "gputwin/sim/resource_estimate.hpp"
#include "gputwin/sim/resource_flags.hpp"
#include "gputwin/sim/work_estimate.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/trace_comparison.hpp"
#include "gputwin/traces/json_value.hpp"

#include <sstream>

namespace gputwin::cli {

namespace {

// The trace's model and plan (models/plan_metadata.hpp) as arguments of `gputwin simulate`.
std::vector<std::string> plan_args(const PlanMetadata& run)
{
  const GptConfig& m = run.model;
  const ParallelPlan& p = run.plan;
  std::vector<std::string> args;
  auto flag = [&args](const char* name, const std::string& value) { args.insert(args.end(), {name, value}); };
  flag("--hidden", std::to_string(m.hidden));
  flag("--heads", std::to_string(m.heads));
  flag("--layers", std::to_string(m.layers));
  flag("--vocab", std::to_string(m.vocab));
  flag("--seq-len", std::to_string(m.seq_len));
  flag("--tp", std::to_string(p.tp));
  flag("--pp", std::to_string(p.pp));
  flag("--dp", std::to_string(p.dp));
  flag("--micro-batch", std::to_string(p.micro_batch));
  flag("--global-batch", std::to_string(p.global_batch));
  flag("--recompute", to_string(p.recompute));
  if (!p.recompute_modules.empty())
    flag("--recompute-modules", to_string(p.recompute_modules));
  flag("--attention", to_string(p.attention));
  flag("--schedule", to_string(p.schedule));
  flag("--chunks", std::to_string(p.schedule == Schedule::Interleaved ? p.chunks : 1));
  flag("--zero", std::to_string(p.zero_stage));
  if (p.fsdp)
    args.emplace_back("--fsdp");
  if (p.sequence_parallel())
    args.emplace_back("--sp");
  return args;
}

// `gputwin simulate` of the trace's plan on `cluster` with the --gpu-model FILE, run here: its iteration time.
// Runs SimGrid: call it in a process of its own.
double simulated_iteration_s(const PlanMetadata& run, const std::string& cluster, const std::string& gpu_model)
{
  std::vector<std::string> args = plan_args(run);
  args.insert(args.end(), {"--cluster", cluster, "--gpu-model", gpu_model, "--json"});
  std::ostringstream out;
  run_simulate(args, out);
  const traces::JsonValue json = traces::parse_json(out.str());
  const traces::JsonValue* value = json.find("iteration_time_s");
  if (value == nullptr || !value->as_double())
    throw std::runtime_error("compare: no 'iteration_time_s' in the report of gputwin simulate");
  return *value->as_double();
}

// The flags of `gputwin compare` (`gputwin compare --iterations` has its own).
ArgParser compare_parser()
{
  ArgParser parser("gputwin compare",
                   "The engine's measured iteration times beside the simulator's, one row per trace: the trace\n"
                   "replayed as measured (compute as measured, communication re-simulated), and -- with\n"
                   "--gpu-model, a model fitted by `gputwin calibrate` -- the plan simulated from scratch. The last\n"
                   "row is the mean absolute error.\n\n"
                   "example: gputwin compare runs/*.trace.json --gpu-model cpu.gpu-model.yaml");
  parser.allow_positional("TRACE...", 1000);
  parser.add_option("--cluster", "NAME|FILE", "cluster to replay and simulate on (default: localhost for CPU traces)");
  parser.add_option("--gpu-model", "FILE", "compute model fitted by gputwin calibrate: adds the simulated column");
  parser.add_switch("--json", "machine-readable rows");
  return parser;
}

} // namespace

int run_compare(const std::vector<std::string>& args, std::ostream& out)
{
  for (const std::string& arg : args) // a table of measured iterations (compare_iterations_command.cpp)
    if (arg == "--iterations")
      return run_compare_iterations(args, out);
  ArgParser parser = compare_parser();
  const ParsedArgs parsed = parser.parse(args);
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  if (parsed.positional().empty())
    throw InputError("compare: expected one or more trace files");
  sim::TraceComparisonRequest request;
  request.trace_paths = parsed.positional();
  request.cluster = parsed.value("--cluster");
  if (const auto gpu_model = parsed.value("--gpu-model"))
    request.simulated_s = [gpu_model](const PlanMetadata& run, const std::string& cluster) {
      return simulated_iteration_s(run, cluster, *gpu_model);
    };
  request.check_replay = [](int64_t gpus, double ops) {
    const ParsedArgs no_flags; // the guard of `gputwin replay` without --max-memory
    sim::check_resources(sim::estimate_programs(gpus, ops), sim::max_memory_bytes(no_flags), no_flags, "the replay");
  };
  const sim::TraceComparison comparison = sim::compare_traces(request);
  if (parsed.has("--json"))
    sim::write_trace_comparison_json(out, comparison);
  else
    sim::print_trace_comparison(out, comparison);
  return 0;
}

} // namespace gputwin::cli
