// Measured against replayed and simulated iteration times, trace by trace (trace_comparison.hpp).
#include "gputwin/sim/trace_comparison.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/json_writer.hpp"
#include "gputwin/sim/as_measured.hpp"
#include "gputwin/sim/isolated_run.hpp"
#include "gputwin/sim/progress_check.hpp"
#include "gputwin/sim/trace_replay.hpp"
#include "gputwin/topologies/cluster_spec.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <cstdio>
#include <cstdlib>

namespace gputwin::sim {

namespace {

// Each trace is replayed once, and with a simulated column its plan simulated once, each in a child process of
// its own; the tasks run in trace order.
struct Task {
  size_t row;
  bool replay; // else the simulation from scratch
};

// The traces read for the comparison: a row each (measured time, simulated columns still empty), and the tasks
// that fill the simulated columns in.
struct CompareInputs {
  std::vector<TraceComparisonRow> rows;
  std::vector<traces::OpGraph> graphs;
  std::vector<PlanMetadata> runs; // each trace's model and plan, read once
  std::vector<std::string> clusters;
  std::vector<Task> tasks;
};

// The traces of the request, read and checked in order; throws InputError for a bad trace or one without a
// measured time.
CompareInputs read_compare_inputs(const TraceComparisonRequest& request)
{
  CompareInputs inputs;
  for (const std::string& path : request.trace_paths) {
    traces::OpGraph g;
    try {
      g = traces::read_op_graph_file(path);
      check_progress(g);
    } catch (const traces::TraceError& e) {
      throw InputError(e.what());
    }
    TraceComparisonRow row;
    row.trace = path;
    inputs.runs.push_back(read_plan_metadata(g.metadata, path));
    const ParallelPlan& plan = inputs.runs.back().plan;
    row.plan = "tp " + std::to_string(plan.tp) + " pp " + std::to_string(plan.pp) + " dp " + std::to_string(plan.dp) +
               " mb " + std::to_string(plan.micro_batch) + (plan.sequence_parallel() ? " sp" : "") + " " +
               to_string(plan.recompute);
    row.measured_s = measured_iteration_s(g);
    if (row.measured_s <= 0)
      throw InputError(path + ": the trace records no measured iteration time (expected a trace of gputwin-engine "
                              "train)");
    const auto device = g.metadata.find("device");
    const bool cpu = device != g.metadata.end() && device->second == "cpu";
    inputs.clusters.push_back(request.cluster.value_or(cpu ? "localhost" : "dgx-a100"));
    inputs.tasks.push_back(Task{inputs.rows.size(), true});
    if (request.simulated_s)
      inputs.tasks.push_back(Task{inputs.rows.size(), false});
    inputs.rows.push_back(row);
    inputs.graphs.push_back(std::move(g));
  }
  return inputs;
}

// The trace replayed as measured on `cluster_name`: its simulated iteration time. Runs SimGrid.
double replayed_iteration_s(const TraceComparisonRequest& request, const traces::OpGraph& trace,
                            const std::string& cluster_name)
{
  const topo::ClusterSpec cluster = cluster_for_trace(topo::load_cluster(cluster_name, 0, {}), trace);
  double ops = 0;
  for (const traces::RankProgram& program : trace.ranks)
    ops += static_cast<double>(program.ops.size());
  if (request.check_replay)
    request.check_replay(cluster.gpus(), ops);
  return replay_trace(trace, cluster).iteration_time_s;
}

// A double as text that reads back to the same value.
std::string exact_text(double value)
{
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

// Runs the tasks, each in a child process, and fills in the rows' replayed and simulated times.
void run_compare_tasks(const TraceComparisonRequest& request, CompareInputs& inputs)
{
  const std::vector<Task>& tasks = inputs.tasks;
  const std::vector<std::string> results = run_isolated(tasks.size(), 1, [&](size_t t) {
    const Task& task = tasks[t];
    if (task.replay)
      return exact_text(replayed_iteration_s(request, inputs.graphs[task.row], inputs.clusters[task.row]));
    return exact_text(request.simulated_s(inputs.runs[task.row], inputs.clusters[task.row]));
  });
  for (size_t t = 0; t < tasks.size(); ++t)
    (tasks[t].replay ? inputs.rows[tasks[t].row].replayed_s : inputs.rows[tasks[t].row].simulated_s) =
        std::strtod(results[t].c_str(), nullptr);
}

} // namespace

TraceComparison compare_traces(const TraceComparisonRequest& request)
{
  CompareInputs inputs = read_compare_inputs(request);
  run_compare_tasks(request, inputs);
  TraceComparison comparison;
  comparison.rows = std::move(inputs.rows);
  comparison.simulated = static_cast<bool>(request.simulated_s);
  for (const TraceComparisonRow& r : comparison.rows) {
    comparison.replay_error_sum += std::abs(r.replayed_s - r.measured_s) / r.measured_s;
    comparison.simulated_error_sum += std::abs(r.simulated_s - r.measured_s) / r.measured_s;
  }
  return comparison;
}

void write_trace_comparison_json(std::ostream& out, const TraceComparison& comparison)
{
  JsonWriter json(out);
  json.begin_object();
  json.key("runs");
  json.begin_array();
  for (const TraceComparisonRow& r : comparison.rows) {
    json.begin_object();
    json.field("trace", r.trace);
    json.field("plan", r.plan);
    json.field("measured_iteration_time_s", r.measured_s);
    json.field("replayed_iteration_time_s", r.replayed_s);
    json.field("replay_relative_error", (r.replayed_s - r.measured_s) / r.measured_s);
    if (comparison.simulated) {
      json.field("simulated_iteration_time_s", r.simulated_s);
      json.field("simulated_relative_error", (r.simulated_s - r.measured_s) / r.measured_s);
    }
    json.end_object();
  }
  json.end_array();
  json.field("replay_mean_absolute_error", comparison.replay_mean_absolute_error());
  if (comparison.simulated)
    json.field("simulated_mean_absolute_error", comparison.simulated_mean_absolute_error());
  json.end_object();
}

void print_trace_comparison(std::ostream& out, const TraceComparison& comparison)
{
  const bool simulated = comparison.simulated;
  const double n = static_cast<double>(comparison.rows.size());
  char line[512];
  std::snprintf(line, sizeof line, "%-36s %-34s %11s %11s %8s%s\n", "trace", "plan", "measured s", "replayed s",
                "error", simulated ? "  simulated s    error" : "");
  out << line;
  for (const TraceComparisonRow& r : comparison.rows) {
    std::string name = r.trace.size() > 36 ? "..." + r.trace.substr(r.trace.size() - 33) : r.trace;
    std::snprintf(line, sizeof line, "%-36s %-34s %11.6f %11.6f %+7.1f%%", name.c_str(), r.plan.c_str(), r.measured_s,
                  r.replayed_s, 100 * (r.replayed_s - r.measured_s) / r.measured_s);
    out << line;
    if (simulated) {
      std::snprintf(line, sizeof line, "  %11.6f %+7.1f%%", r.simulated_s,
                    100 * (r.simulated_s - r.measured_s) / r.measured_s);
      out << line;
    }
    out << "\n";
  }
  std::snprintf(line, sizeof line, "%-36s %-34s %11s %11s %7.1f%%", "mean absolute error", "", "", "",
                100 * comparison.replay_error_sum / n);
  out << line;
  if (simulated) {
    std::snprintf(line, sizeof line, "  %11s %7.1f%%", "", 100 * comparison.simulated_error_sum / n);
    out << line;
  }
  out << "\n";
}

} // namespace gputwin::sim
