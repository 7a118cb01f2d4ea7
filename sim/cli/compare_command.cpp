// `gputwin compare`: the engine's measured iteration times beside the simulator's, one row per trace.
#include "commands.hpp"

#include "gputwin/models/input_error.hpp"
#include "gputwin/traces/json_value.hpp"
#include "gputwin/traces/json_writer.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <cmath>
#include <cstdio>
#include <unistd.h>

namespace gputwin::cli {

namespace {

std::string shell_quote(const std::string& s)
{
  std::string q = "'";
  for (const char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// This very binary: each run gets its own process, because SimGrid allows one platform per process.
std::string self_path()
{
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0)
    throw std::runtime_error("compare: cannot find its own executable (/proc/self/exe)");
  return std::string(buffer, static_cast<size_t>(n));
}

// Runs `gputwin ARGS --json` and returns the number `key` of its output; throws with its error line.
double run_json(const std::string& args, const char* key)
{
  const std::string command = shell_quote(self_path()) + " " + args + " --json 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr)
    throw std::runtime_error("compare: cannot run " + command);
  std::string output;
  char chunk[4096];
  size_t n = 0;
  while ((n = fread(chunk, 1, sizeof chunk, pipe)) > 0)
    output.append(chunk, n);
  const int status = pclose(pipe);
  if (status != 0) {
    const size_t error = output.find("error: ");
    std::string line = error == std::string::npos ? output : output.substr(error + 7);
    line = line.substr(0, line.find('\n'));
    throw InputError(line);
  }
  const size_t start = output.find('{'); // warnings may precede the JSON
  const traces::JsonValue json = traces::parse_json(output.substr(start == std::string::npos ? 0 : start));
  const traces::JsonValue* value = json.find(key);
  if (value == nullptr || !value->as_double())
    throw std::runtime_error(std::string("compare: no '") + key + "' in the output of " + command);
  return *value->as_double();
}

std::string meta(const traces::OpGraph& g, const char* key, const char* fallback = "?")
{
  const auto it = g.metadata.find(key);
  return it == g.metadata.end() ? fallback : it->second;
}

// The trace's model and plan as flags of `gputwin simulate`.
std::string plan_flags(const traces::OpGraph& g)
{
  std::string flags;
  for (const char* key : {"hidden", "heads", "layers", "vocab", "tp", "pp", "dp", "micro_batch", "global_batch",
                          "recompute", "schedule", "chunks", "zero"}) {
    std::string flag = std::string("--") + key;
    for (char& c : flag)
      c = c == '_' ? '-' : c;
    flags += " " + flag + " " + shell_quote(meta(g, key));
  }
  flags += " --seq-len " + shell_quote(meta(g, "seq_len"));
  if (g.metadata.count("attention") != 0) // traces written before the attention choice existed are unfused
    flags += " --attention " + shell_quote(meta(g, "attention"));
  if (meta(g, "sequence_parallel") == "true")
    flags += " --sp";
  if (meta(g, "schedule") != "interleaved")
    flags += " --chunks 1";
  return flags;
}

struct Row {
  std::string trace, plan;
  double measured_s = 0, replayed_s = 0, predicted_s = NAN;
};

} // namespace

int run_compare(const std::vector<std::string>& args, std::ostream& out)
{
  for (const std::string& arg : args) // a table of measured iterations (compare_iterations_command.cpp)
    if (arg == "--iterations")
      return run_compare_iterations(args, out);
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
  const ParsedArgs parsed = parser.parse(args);
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  if (parsed.positional().empty())
    throw InputError("compare: expected one or more trace files");

  std::vector<Row> rows;
  for (const std::string& path : parsed.positional()) {
    traces::OpGraph g;
    try {
      g = traces::read_op_graph_file(path);
    } catch (const traces::TraceError& e) {
      throw InputError(e.what());
    }
    Row row;
    row.trace = path;
    row.plan = "tp " + meta(g, "tp") + " pp " + meta(g, "pp") + " dp " + meta(g, "dp") + " mb " +
               meta(g, "micro_batch") + (meta(g, "sequence_parallel") == "true" ? " sp" : "") + " " +
               meta(g, "recompute");
    const std::string cluster =
        parsed.value("--cluster").value_or(meta(g, "device") == "cpu" ? "localhost" : "dgx-a100");
    const std::string replay = "replay " + shell_quote(path) + " --cluster " + shell_quote(cluster);
    row.replayed_s = run_json(replay, "iteration_time_s");
    row.measured_s = run_json(replay, "measured_iteration_time_s");
    if (const auto model = parsed.value("--gpu-model"))
      row.predicted_s = run_json("simulate" + plan_flags(g) + " --cluster " + shell_quote(cluster) + " --gpu-model " +
                                     shell_quote(*model),
                                 "iteration_time_s");
    rows.push_back(row);
  }

  double replay_error_sum = 0, predicted_error_sum = 0;
  for (const Row& r : rows) {
    replay_error_sum += std::abs(r.replayed_s - r.measured_s) / r.measured_s;
    predicted_error_sum += std::abs(r.predicted_s - r.measured_s) / r.measured_s;
  }
  const double n = static_cast<double>(rows.size());
  const bool predicted = parsed.has("--gpu-model");
  if (parsed.has("--json")) {
    traces::JsonWriter json(out);
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
    json.field("replay_mean_absolute_error", replay_error_sum / n);
    if (predicted)
      json.field("simulated_mean_absolute_error", predicted_error_sum / n);
    json.end_object();
    return 0;
  }
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
                100 * replay_error_sum / n);
  out << line;
  if (predicted) {
    std::snprintf(line, sizeof line, "  %11s %7.1f%%", "", 100 * predicted_error_sum / n);
    out << line;
  }
  out << "\n";
  return 0;
}

} // namespace gputwin::cli
