#pragma once
// How an executed op counts towards its stage's report, shared by both executors so that they report the
// same compute, exposed communication and pipeline window for the same timings. Plain C++.

#include "gputwin/sim/iteration_result.hpp"

#include <vector>

namespace gputwin::sim {

// The stream ops run on when they are not on a side stream: only its compute counts as the rank's compute.
inline constexpr int32_t main_compute_stream = 0;

// The micro-batch each op of `program` repeats with in a steady state: its own, or for an op outside any
// micro-batch (a data-parallel collective, ZeRO-3's gathers) that of the last op before it in the program that has
// one (-1 before the first): ops a micro-batch's ops issue, such as ZeRO-2/3's per-micro-batch reduce-scatters,
// repeat with it.
std::vector<int32_t> period_micro_batches(const traces::RankProgram& program);

class StageAccounting {
public:
  // `record_spans`: also keep each interval of exposed communication (times.exposed_spans); `shares_of`: the
  // program whose ops are accounted, to also keep what each micro-batch's ops add (times.by_micro_batch, by
  // period_micro_batches).
  explicit StageAccounting(StageTimes& times, bool record_spans = false,
                           const traces::RankProgram* shares_of = nullptr);

  // Op `op` ran over [start_s, end_s].
  void op(const traces::Op& op, double start_s, double end_s);
  // The compute stream reached `op` at `wait_start_s` and could start it at `start_s`; when it waited for a
  // collective that is exposed communication, when for a pipeline message it is idle (the bubble).
  void wait(const traces::RankProgram& program, const traces::Op& op, double wait_start_s, double start_s);
  // Communication op `op` put `count` flows on the network.
  void flows(const traces::Op& op, int64_t count);

private:
  // The share of op's micro-batch, or null when shares are not recorded or the op belongs to none.
  MicroBatchShare* share(const traces::Op& op);
  // `seconds` added to a figure of the stage and, with a share, to the same figure of the micro-batch's share.
  void add(double StageTimes::*figure, double MicroBatchShare::*part, MicroBatchShare* share, double seconds);

  StageTimes& times_;
  bool started_ = false; // the pipeline window has begun
  bool record_spans_ = false;
  const traces::RankProgram* program_ = nullptr; // with shares: the program accounted and each op's micro-batch
  std::vector<int32_t> period_micro_batch_;
};

} // namespace gputwin::sim
