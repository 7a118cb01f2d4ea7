#pragma once
// `gputwin replay` of a gputwin trace (traces/FORMAT.md): the captured iteration as measured, made faster
// (compute_scale), re-targeted to a GPU compute model, or its layer ops scaled out to a larger plan; the simulated
// iteration time beside the measured one, and the report as JSON and text. Runs SimGrid: one per process.

#include "gputwin/sim/iteration_result.hpp"
#include "gputwin/sim/replay_request.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <optional>
#include <ostream>
#include <string>
#include <utility>

namespace gputwin::sim {

struct OpGraphReplay {
  std::string trace_path;
  traces::OpGraph trace;
  topo::ClusterSpec cluster;               // the machine of the trace, sized again for a scaled-out plan
  std::optional<GpuComputeModel> retarget; // --gpu or --gpu-model
  bool scaled = false;                     // the layer ops replayed in a larger plan
  double compute_scale = 1;                // as measured, compute this many times faster
  // The model and plan replayed (the scaled plan when scaled out); nullopt when the trace does not record them.
  std::optional<std::pair<GptConfig, ParallelPlan>> run;
  IterationResult result;
  int64_t ranks_per_program = 1; // ranks each simulated program stands for (for the timeline)
  double wall_s = 0;             // the replay's wall-clock time
  double measured_s = 0;         // the trace's measured iteration time; 0 when it records none
  bool comparable = false;       // the replay runs the captured plan with the captured durations
  double relative_error = 0;     // (simulated - measured) / measured when comparable, else 0
};

// Replays `trace` (read from request.trace_path and check_progress'ed) as `request` says. Throws InputError for
// bad values and for flags the mode would ignore (--global-batch without a scale-out, --compute-scale with one or
// with a re-target), and when a guard refuses.
OpGraphReplay replay_op_graph(const ReplayRequest& request, traces::OpGraph trace);

// The JSON report: the trace, the run (model, plan, cluster), the mode, simulated beside measured.
void write_op_graph_replay_json(std::ostream& out, const OpGraphReplay& replay);

// The text report: the trace, the cluster and mode, simulated beside measured.
void print_op_graph_replay(std::ostream& out, const OpGraphReplay& replay);

} // namespace gputwin::sim
