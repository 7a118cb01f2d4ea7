#pragma once
// `gputwin compare`: the engine's measured iteration times beside the simulator's, one row per trace -- the trace
// replayed as measured (trace_replay.hpp) and, when asked, its model and plan simulated from scratch -- with the
// mean absolute relative error of each column, and the report as JSON and text. Each run is a child process of
// its own (run_isolated: SimGrid allows one platform per process).

#include "gputwin/models/plan_metadata.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace gputwin::sim {

struct TraceComparisonRequest {
  std::vector<std::string> trace_paths;
  std::optional<std::string> cluster; // --cluster; default localhost for a CPU trace, else dgx-a100
  // The iteration time, in seconds, of `run` simulated from scratch on `cluster_name` (runs SimGrid: it is called
  // in a child process). Empty: no simulated column.
  std::function<double(const PlanMetadata& run, const std::string& cluster_name)> simulated_s;
  // The resource check of replaying `ops` ops on `gpus` GPUs (throws InputError); empty checks nothing.
  std::function<void(int64_t gpus, double ops)> check_replay;
};

struct TraceComparisonRow {
  std::string trace, plan; // the trace file; its plan, short ("tp 2 pp 1 dp 1 mb 1 sp none")
  double measured_s = 0, replayed_s = 0, simulated_s = NAN;
};

struct TraceComparison {
  std::vector<TraceComparisonRow> rows;
  bool simulated = false; // the rows have the simulated column
  // Sums over the rows of |replayed - measured| / measured, and of |simulated - measured| / measured.
  double replay_error_sum = 0, simulated_error_sum = 0;

  double replay_mean_absolute_error() const { return replay_error_sum / static_cast<double>(rows.size()); }
  double simulated_mean_absolute_error() const { return simulated_error_sum / static_cast<double>(rows.size()); }
};

// Reads every trace (each must record a measured iteration time) before anything runs, then replays each and,
// with request.simulated_s, simulates each plan, in trace order. Throws InputError for a bad trace.
TraceComparison compare_traces(const TraceComparisonRequest& request);

// The rows and their mean absolute errors as JSON; the simulated columns when comparison.simulated.
void write_trace_comparison_json(std::ostream& out, const TraceComparison& comparison);

// The rows as a table, the last row the mean absolute errors; the simulated columns when comparison.simulated.
void print_trace_comparison(std::ostream& out, const TraceComparison& comparison);

} // namespace gputwin::sim
