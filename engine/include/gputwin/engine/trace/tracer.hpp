#pragma once
// Records what one rank does as traces::Op entries (the op graph the simulator replays), timed by an
// OpClock: the host's steady clock by default, the backend's (CUDA events) where it has one, so a GPU op is
// timed on the GPU without the host waiting for it. Ops are issued one at a time by the rank's thread; each
// carries a stream (compute, tensor-parallel, pipeline or data-parallel communication) and depends on the op
// issued before it when that one ran on another stream: the engine orders its streams exactly so (events on
// the GPU).

#include "gputwin/engine/trace/op_clock.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

namespace gputwin::engine {

// What the rank is working on: set by the pipeline driver and the layers, copied into every op.
struct OpContext {
  traces::Phase phase = traces::Phase::Forward;
  int32_t layer = -1;
  int32_t micro_batch = -1;
  int32_t chunk = 0;
};

class Tracer {
public:
  using Clock = std::chrono::steady_clock;
  // `epoch` is shared by every rank of the run, so their timelines line up.
  Tracer(int32_t rank, Clock::time_point epoch) : rank_(rank), epoch_(epoch) {}

  // Times ops with `clock` (it must outlive the tracer); null: the host's steady clock.
  void use_clock(OpClock* clock) { clock_ = clock != nullptr ? clock : &host_clock_; }

  // Starts an iteration: resets the communication sequence numbers and, if `record`, the op list and the clock.
  void start_iteration(bool record);
  bool recording() const { return recording_; }

  void set_context(const OpContext& context) { context_ = context; }
  const OpContext& context() const { return context_; }

  // Opens an op with the current context (fields of `op` other than phase/layer/micro_batch/chunk are kept);
  // returns its index, or -1 when not recording.
  int64_t begin(traces::Op op);
  // Closes op `index` (marks its end). No-op for -1.
  void end(int64_t index);
  traces::Op* op(int64_t index) { return index < 0 ? nullptr : &program_.ops[static_cast<size_t>(index)]; }

  // The next sequence number of a collective on trace group `group`, and of a send to world rank `peer`.
  int64_t next_collective_sequence(int32_t group) { return collective_sequence_[group]++; }
  int64_t next_send_sequence(int32_t peer) { return send_sequence_[peer]++; }

  // The recorded ops (the rank program of the last recorded iteration) with their times. REQUIRES: the
  // backend's work of that iteration has finished (it was synchronized), or this waits for it.
  traces::RankProgram take_program();

private:
  struct Marks {
    int64_t start = -1, end = -1; // OpClock handles
  };
  int32_t rank_;
  Clock::time_point epoch_;
  HostOpClock host_clock_;
  OpClock* clock_ = &host_clock_;
  std::vector<Marks> marks_; // of program_.ops, by index
  bool recording_ = false;
  OpContext context_;
  traces::RankProgram program_;
  std::map<int32_t, int64_t> collective_sequence_, send_sequence_;
};

// Records one op around a scope: begin at construction, end at destruction.
class TraceScope {
public:
  TraceScope(Tracer& tracer, traces::Op op) : tracer_(tracer), index_(tracer.begin(std::move(op))) {}
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
  ~TraceScope() { tracer_.end(index_); }
  traces::Op* op() { return tracer_.op(index_); }

private:
  Tracer& tracer_;
  int64_t index_;
};

} // namespace gputwin::engine
