// The tracer's timing: marks are placed on the op's stream when the op opens and closes, and turned into
// times only when the program is taken (so a GPU clock never makes the host wait inside the step); a fake
// clock shows which stream each mark went to and when it was resolved.
#include "gputwin/engine/trace/tracer.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace gputwin::engine {
namespace {

// Each mark's time is 1000 x (its index + 1) ns; resolving is recorded.
class FakeClock final : public OpClock {
public:
  void start(Clock::time_point) override
  {
    ++starts;
    streams.clear();
  }
  int64_t mark(TraceStream stream) override
  {
    streams.push_back(stream);
    return static_cast<int64_t>(streams.size()) - 1;
  }
  int64_t nanoseconds(int64_t handle) override
  {
    ++resolved;
    return 1000 * (handle + 1);
  }
  int starts = 0, resolved = 0;
  std::vector<TraceStream> streams;
};

traces::Op op_on(TraceStream stream, const char* name)
{
  traces::Op op;
  op.name = name;
  op.stream = static_cast<int32_t>(stream);
  return op;
}

TEST(Tracer, MarksOnTheOpsStreamAndResolvesWhenTheProgramIsTaken)
{
  FakeClock clock;
  Tracer tracer(3, Tracer::Clock::now());
  tracer.use_clock(&clock);
  tracer.start_iteration(false);
  EXPECT_EQ(tracer.begin(op_on(TraceStream::Compute, "not recorded")), -1);
  EXPECT_EQ(clock.starts, 0);
  EXPECT_TRUE(clock.streams.empty()) << "no marks outside a recorded iteration";

  tracer.start_iteration(true);
  EXPECT_EQ(clock.starts, 1);
  {
    TraceScope gemm(tracer, op_on(TraceStream::Compute, "gemm"));
  }
  {
    TraceScope all_reduce(tracer, op_on(TraceStream::TensorParallel, "all_reduce"));
  }
  const int64_t open = tracer.begin(op_on(TraceStream::Compute, "left open"));
  EXPECT_EQ(clock.resolved, 0) << "marks are resolved only when the program is taken";
  EXPECT_EQ(clock.streams,
            (std::vector<TraceStream>{TraceStream::Compute, TraceStream::Compute, TraceStream::TensorParallel,
                                      TraceStream::TensorParallel, TraceStream::Compute}));

  const traces::RankProgram program = tracer.take_program();
  EXPECT_EQ(program.rank, 3);
  ASSERT_EQ(program.ops.size(), 3u);
  EXPECT_EQ(program.ops[0].start_ns, 1000);
  EXPECT_EQ(program.ops[0].duration_ns, 1000);
  EXPECT_EQ(program.ops[1].start_ns, 3000);
  EXPECT_EQ(program.ops[1].duration_ns, 1000);
  EXPECT_EQ(program.ops[1].deps, (std::vector<int64_t>{0})) << "another stream waits for its predecessor";
  EXPECT_EQ(program.ops[2].start_ns, 5000);
  EXPECT_EQ(program.ops[2].duration_ns, 0) << "an op never closed lasts nothing";
  EXPECT_EQ(open, 2);
}

TEST(Tracer, HostClockTimesAreOrdered)
{
  Tracer tracer(0, Tracer::Clock::now());
  tracer.start_iteration(true);
  for (int i = 0; i < 3; ++i) {
    TraceScope scope(tracer, op_on(TraceStream::Compute, "op"));
  }
  const traces::RankProgram program = tracer.take_program();
  ASSERT_EQ(program.ops.size(), 3u);
  for (size_t i = 1; i < program.ops.size(); ++i) {
    EXPECT_GE(program.ops[i].duration_ns, 0);
    EXPECT_GE(program.ops[i].start_ns, program.ops[i - 1].start_ns + program.ops[i - 1].duration_ns);
  }
}

} // namespace
} // namespace gputwin::engine
