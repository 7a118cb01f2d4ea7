#include "gputwin/engine/trace/tracer.hpp"

#include <algorithm>

namespace gputwin::engine {

void Tracer::start_iteration(bool record)
{
  recording_ = record;
  collective_sequence_.clear();
  send_sequence_.clear();
  if (record) {
    program_ = traces::RankProgram{rank_, {}};
    marks_.clear();
    clock_->start(epoch_);
  }
}

int64_t Tracer::begin(traces::Op op)
{
  if (!recording_)
    return -1;
  op.id = static_cast<int64_t>(program_.ops.size());
  op.phase = context_.phase;
  op.layer = context_.layer;
  op.micro_batch = context_.micro_batch;
  op.chunk = context_.chunk;
  // Everything on this rank is ordered by issue: an op on another stream than its predecessor waits for it.
  if (!program_.ops.empty() && program_.ops.back().stream != op.stream)
    op.deps = {program_.ops.back().id};
  marks_.push_back(Marks{clock_->mark(static_cast<TraceStream>(op.stream)), -1});
  program_.ops.push_back(std::move(op));
  return static_cast<int64_t>(program_.ops.size()) - 1;
}

void Tracer::end(int64_t index)
{
  if (index < 0)
    return;
  const traces::Op& op = program_.ops[static_cast<size_t>(index)];
  marks_[static_cast<size_t>(index)].end = clock_->mark(static_cast<TraceStream>(op.stream));
}

traces::RankProgram Tracer::take_program()
{
  for (size_t i = 0; i < program_.ops.size(); ++i) {
    traces::Op& op = program_.ops[i];
    const Marks& m = marks_[i];
    op.start_ns = clock_->nanoseconds(m.start);
    // An op left open (its scope unwound by an error) lasts nothing.
    op.duration_ns = m.end < 0 ? 0 : std::max<int64_t>(0, clock_->nanoseconds(m.end) - op.start_ns);
  }
  traces::RankProgram program = std::move(program_);
  program_ = traces::RankProgram{rank_, {}};
  marks_.clear();
  return program;
}

} // namespace gputwin::engine
