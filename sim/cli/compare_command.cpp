// `gputwin compare`: the engine's measured iteration times beside the simulator's, one row per trace.
#include "gputwin/sim/isolated_run.hpp"
#include "commands.hpp"
#include "resource_estimate.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/models/plan_metadata.hpp"
#include "gputwin/sim/as_measured.hpp"
#include "gputwin/sim/progress_check.hpp"
#include "gputwin/sim/trace_replay.hpp"
#include "gputwin/topologies/cluster_spec.hpp"
#include "gputwin/traces/json_value.hpp"
#include "gputwin/common/json_writer.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace gputwin::cli {

namespace {

std::string meta(const traces::OpGraph& g, const char* key, const char* fallback = "?")
{
  const auto it = g.metadata.find(key);
  return it == g.metadata.end() ? fallback : it->second;
}

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

// The trace replayed as measured on `cluster_name` (sim/replay/trace_replay.hpp): its simulated iteration time.
// Runs SimGrid: call it in a process of its own.
double replayed_iteration_s(const traces::OpGraph& trace, const std::string& cluster_name)
{
  const topo::ClusterSpec cluster = sim::cluster_for_trace(topo::load_cluster(cluster_name, 0, {}), trace);
  double ops = 0;
  for (const traces::RankProgram& program : trace.ranks)
    ops += static_cast<double>(program.ops.size());
  const ParsedArgs no_flags; // the guard of `gputwin replay` without --max-memory
  check_resources(estimate_programs(cluster.gpus(), ops), max_memory_bytes(no_flags), no_flags, "the replay");
  return sim::replay_trace(trace, cluster).iteration_time_s;
}

// `gputwin simulate ARGS --json`, run here: its iteration time. Runs SimGrid: call it in a process of its own.
double simulated_iteration_s(std::vector<std::string> args)
{
  args.emplace_back("--json");
  std::ostringstream out;
  run_simulate(args, out);
  const traces::JsonValue json = traces::parse_json(out.str());
  const traces::JsonValue* value = json.find("iteration_time_s");
  if (value == nullptr || !value->as_double())
    throw std::runtime_error("compare: no 'iteration_time_s' in the report of gputwin simulate");
  return *value->as_double();
}

// A double as text that reads back to the same value.
std::string exact_text(double value)
{
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

struct Row {
  std::string trace, plan;
  double measured_s = 0, replayed_s = 0, predicted_s = NAN;
};

// Each trace is replayed once, and with --gpu-model its plan simulated once, each in a child process of its own
// (SimGrid allows one platform per process); the tasks run in trace order.
struct Task {
  size_t row;
  bool replay; // else the simulation from scratch
};

// The traces read for the comparison: a row each (measured time, simulated columns still empty), and the tasks
// that fill the simulated columns in.
struct CompareInputs {
  std::vector<Row> rows;
  std::vector<traces::OpGraph> graphs;
  std::vector<PlanMetadata> runs; // each trace's model and plan, read once
  std::vector<std::string> clusters;
  std::vector<Task> tasks;
};

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

// The traces given, read and checked in order; throws InputError for a bad trace or one without a measured time.
CompareInputs read_compare_inputs(const ParsedArgs& parsed)
{
  CompareInputs inputs;
  for (const std::string& path : parsed.positional()) {
    traces::OpGraph g;
    try {
      g = traces::read_op_graph_file(path);
      sim::check_progress(g);
    } catch (const traces::TraceError& e) {
      throw InputError(e.what());
    }
    Row row;
    row.trace = path;
    inputs.runs.push_back(read_plan_metadata(g.metadata, path));
    const ParallelPlan& plan = inputs.runs.back().plan;
    row.plan = "tp " + std::to_string(plan.tp) + " pp " + std::to_string(plan.pp) + " dp " + std::to_string(plan.dp) +
               " mb " + std::to_string(plan.micro_batch) + (plan.sequence_parallel() ? " sp" : "") + " " +
               to_string(plan.recompute);
    row.measured_s = sim::measured_iteration_s(g);
    if (row.measured_s <= 0)
      throw InputError(path + ": the trace records no measured iteration time (expected a trace of gputwin-engine "
                              "train)");
    inputs.clusters.push_back(
        parsed.value("--cluster").value_or(meta(g, "device") == "cpu" ? "localhost" : "dgx-a100"));
    inputs.tasks.push_back(Task{inputs.rows.size(), true});
    if (parsed.has("--gpu-model"))
      inputs.tasks.push_back(Task{inputs.rows.size(), false});
    inputs.rows.push_back(row);
    inputs.graphs.push_back(std::move(g));
  }
  return inputs;
}

// Runs the tasks, each in a child process, and fills in the rows' replayed and simulated times.
void run_compare_tasks(const ParsedArgs& parsed, CompareInputs& inputs)
{
  const std::vector<Task>& tasks = inputs.tasks;
  const std::vector<std::string> results = sim::run_isolated(tasks.size(), 1, [&](size_t t) {
    const Task& task = tasks[t];
    if (task.replay)
      return exact_text(replayed_iteration_s(inputs.graphs[task.row], inputs.clusters[task.row]));
    std::vector<std::string> simulate_args = plan_args(inputs.runs[task.row]);
    simulate_args.insert(simulate_args.end(),
                         {"--cluster", inputs.clusters[task.row], "--gpu-model", *parsed.value("--gpu-model")});
    return exact_text(simulated_iteration_s(simulate_args));
  });
  for (size_t t = 0; t < tasks.size(); ++t)
    (tasks[t].replay ? inputs.rows[tasks[t].row].replayed_s : inputs.rows[tasks[t].row].predicted_s) =
        std::strtod(results[t].c_str(), nullptr);
}

// The relative errors |replayed - measured| / measured and |simulated - measured| / measured summed over the rows.
struct ErrorSums {
  double replay = 0, predicted = 0;
};

ErrorSums relative_error_sums(const std::vector<Row>& rows)
{
  ErrorSums sums;
  for (const Row& r : rows) {
    sums.replay += std::abs(r.replayed_s - r.measured_s) / r.measured_s;
    sums.predicted += std::abs(r.predicted_s - r.measured_s) / r.measured_s;
  }
  return sums;
}

// The rows and their mean absolute errors as JSON; the simulated columns when `predicted` (--gpu-model).
void write_compare_json(std::ostream& out, const std::vector<Row>& rows, bool predicted)
{
  const ErrorSums sums = relative_error_sums(rows);
  const double n = static_cast<double>(rows.size());
  JsonWriter json(out);
  json.begin_object();
  json.key("runs");
  json.begin_array();
  for (const Row& r : rows) {
    json.begin_object();
    json.field("trace", r.trace);
    json.field("plan", r.plan);
    json.field("measured_iteration_time_s", r.measured_s);
    json.field("replayed_iteration_time_s", r.replayed_s);
    json.field("replay_relative_error", (r.replayed_s - r.measured_s) / r.measured_s);
    if (predicted) {
      json.field("simulated_iteration_time_s", r.predicted_s);
      json.field("simulated_relative_error", (r.predicted_s - r.measured_s) / r.measured_s);
    }
    json.end_object();
  }
  json.end_array();
  json.field("replay_mean_absolute_error", sums.replay / n);
  if (predicted)
    json.field("simulated_mean_absolute_error", sums.predicted / n);
  json.end_object();
}

// The rows as a table, the last row the mean absolute errors; the simulated columns when `predicted`.
void print_compare_table(std::ostream& out, const std::vector<Row>& rows, bool predicted)
{
  const ErrorSums sums = relative_error_sums(rows);
  const double n = static_cast<double>(rows.size());
  char line[512];
  std::snprintf(line, sizeof line, "%-36s %-34s %11s %11s %8s%s\n", "trace", "plan", "measured s", "replayed s",
                "error", predicted ? "  simulated s    error" : "");
  out << line;
  for (const Row& r : rows) {
    std::string name = r.trace.size() > 36 ? "..." + r.trace.substr(r.trace.size() - 33) : r.trace;
    std::snprintf(line, sizeof line, "%-36s %-34s %11.6f %11.6f %+7.1f%%", name.c_str(), r.plan.c_str(), r.measured_s,
                  r.replayed_s, 100 * (r.replayed_s - r.measured_s) / r.measured_s);
    out << line;
    if (predicted) {
      std::snprintf(line, sizeof line, "  %11.6f %+7.1f%%", r.predicted_s,
                    100 * (r.predicted_s - r.measured_s) / r.measured_s);
      out << line;
    }
    out << "\n";
  }
  std::snprintf(line, sizeof line, "%-36s %-34s %11s %11s %7.1f%%", "mean absolute error", "", "", "",
                100 * sums.replay / n);
  out << line;
  if (predicted) {
    std::snprintf(line, sizeof line, "  %11s %7.1f%%", "", 100 * sums.predicted / n);
    out << line;
  }
  out << "\n";
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
  CompareInputs inputs = read_compare_inputs(parsed);
  run_compare_tasks(parsed, inputs);
  if (parsed.has("--json"))
    write_compare_json(out, inputs.rows, parsed.has("--gpu-model"));
  else
    print_compare_table(out, inputs.rows, parsed.has("--gpu-model"));
  return 0;
}

} // namespace gputwin::cli
