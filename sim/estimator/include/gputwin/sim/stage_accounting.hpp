#pragma once
// How an executed op counts towards its stage's report, shared by both executors so that they report the
// same compute, exposed communication and pipeline window for the same timings. Plain C++.

#include "gputwin/sim/iteration_result.hpp"

namespace gputwin::sim {

// The stream ops run on when they are not on a side stream: only its compute counts as the rank's compute.
inline constexpr int32_t main_compute_stream = 0;

class StageAccounting {
public:
  // `record_spans`: also keep each interval of exposed communication (times.exposed_spans).
  explicit StageAccounting(StageTimes& times, bool record_spans = false) : times_(times), record_spans_(record_spans) {}

  // Op `op` ran over [start_s, end_s].
  void op(const traces::Op& op, double start_s, double end_s);
  // The compute stream reached `op` at `wait_start_s` and could start it at `start_s`; when it waited for a
  // collective that is exposed communication, when for a pipeline message it is idle (the bubble).
  void wait(const traces::RankProgram& program, const traces::Op& op, double wait_start_s, double start_s);

private:
  StageTimes& times_;
  bool started_ = false; // the pipeline window has begun
  bool record_spans_ = false;
};

} // namespace gputwin::sim
