#pragma once
// Where the tracer's op times come from. An op's start and end are marks placed in the order of the stream
// it runs on: on the host (CPU backend) a mark is the steady clock's reading when it is placed; on a GPU it is
// an event recorded on the op's stream, whose time is known only once the stream has reached it. The tracer
// places marks while the iteration runs and turns them into nanoseconds afterwards, so timing an op never
// waits for it.

#include <chrono>
#include <cstdint>

namespace gputwin::engine {

// The streams of the trace (traces::Op::stream): compute, and the three kinds of communication.
enum class TraceStream : int32_t { Compute = 0, TensorParallel = 1, Pipeline = 2, DataParallel = 3 };

class OpClock {
public:
  using Clock = std::chrono::steady_clock;
  virtual ~OpClock() = default;

  // A recorded iteration starts (the backend's earlier work has been waited for): marks count from here, and
  // times are nanoseconds since `epoch`.
  virtual void start(Clock::time_point epoch) = 0;
  // Places a mark after the work issued so far to `stream`; returns its handle.
  virtual int64_t mark(TraceStream stream) = 0;
  // The time of mark `handle`, in nanoseconds since the epoch. May wait until the stream has reached it.
  virtual int64_t nanoseconds(int64_t handle) = 0;
};

// The host's steady clock: a mark is the time it was placed (work on the host is done when its call returns).
class HostOpClock final : public OpClock {
public:
  void start(Clock::time_point epoch) override { epoch_ = epoch; }
  int64_t mark(TraceStream) override
  {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - epoch_).count();
  }
  int64_t nanoseconds(int64_t handle) override { return handle; }

private:
  Clock::time_point epoch_ = Clock::now();
};

} // namespace gputwin::engine
