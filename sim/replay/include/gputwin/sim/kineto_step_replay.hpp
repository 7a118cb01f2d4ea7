#pragma once
// `gputwin replay` of a PyTorch profiler (Kineto) trace: one ProfilerStep replayed as measured or what-if
// (kineto_replay.hpp) on a cluster, beside its measured duration, and the report as JSON and text. Runs SimGrid:
// one per process.

#include "gputwin/sim/iteration_result.hpp"
#include "gputwin/sim/kineto_replay.hpp"
#include "gputwin/sim/replay_request.hpp"
#include "gputwin/traces/kineto.hpp"

#include <ostream>
#include <string>

namespace gputwin::sim {

struct KinetoStepReplay {
  std::string trace_path;
  traces::KinetoTrace kineto; // the file, its selected step
  topo::ClusterSpec cluster;
  KinetoScales scales; // 1, 1: as measured
  IterationResult result;
  double wall_s = 0; // the replay's wall-clock time

  bool as_measured() const { return scales.compute == 1 && scales.comm == 1; }
  // (simulated - measured) / measured of the step.
  double relative_error() const;
};

// Replays the step request.step (default: the step of median duration) of the Kineto trace `text` read from
// request.trace_path. Throws InputError for flags a profiler trace cannot honour (--gpu, --gpu-model, a
// scale-out), for a bad trace, and when a guard refuses.
KinetoStepReplay replay_kineto_step(const ReplayRequest& request, const std::string& text);

// The JSON report: the trace and its step, what it holds, the scales, simulated beside measured.
void write_kineto_step_replay_json(std::ostream& out, const KinetoStepReplay& replay);

// The text report: the step, the mode, simulated beside measured.
void print_kineto_step_replay(std::ostream& out, const KinetoStepReplay& replay);

} // namespace gputwin::sim
