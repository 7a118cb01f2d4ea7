#include "gputwin/engine/trace/tracer.hpp"

namespace gputwin::engine {

void Tracer::start_iteration(bool record)
{
  recording_ = record;
  collective_sequence_.clear();
  send_sequence_.clear();
  if (record)
    program_ = traces::RankProgram{rank_, {}};
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
  // Everything on this rank ran in issue order: an op on another stream than its predecessor waits for it.
  if (!program_.ops.empty() && program_.ops.back().stream != op.stream)
    op.deps = {program_.ops.back().id};
  op.start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - epoch_).count();
  program_.ops.push_back(std::move(op));
  return static_cast<int64_t>(program_.ops.size()) - 1;
}

void Tracer::end(int64_t index)
{
  if (index < 0)
    return;
  traces::Op& op = program_.ops[static_cast<size_t>(index)];
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - epoch_).count();
  op.duration_ns = now_ns - op.start_ns;
}

traces::RankProgram Tracer::take_program()
{
  traces::RankProgram program = std::move(program_);
  program_ = traces::RankProgram{rank_, {}};
  return program;
}

} // namespace gputwin::engine
