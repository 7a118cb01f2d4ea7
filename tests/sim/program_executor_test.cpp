// execute_programs (sim/executor/program_executor.hpp) on hand-made programs, timed by hand: streams of a rank
// run concurrently unless an op depends on another; a collective starts when its last member reaches it and
// pays its flows and latency; a pipeline message is received after its send's flow. (Direct unit tests of the
// executor; check_progress has its own in tests/cli/replay_cli_test.cpp.)
#include "gputwin/sim/program_executor.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace gputwin::sim {
namespace {

traces::Op compute_op(int64_t id, int32_t stream, std::vector<int64_t> deps = {})
{
  traces::Op op;
  op.id = id;
  op.kind = traces::OpKind::Compute;
  op.name = "c" + std::to_string(id);
  op.stream = stream;
  op.deps = std::move(deps);
  return op;
}

// Collectives: no flows and a fixed latency; messages: one flow of the send's bytes between the two GPUs.
class FixedComm : public CommSource {
public:
  explicit FixedComm(double collective_latency_s) { collective_.latency_s = collective_latency_s; }
  const CommWork& collective(const traces::Op&) override { return collective_; }
  const CommWork& message(int32_t src_rank, const traces::Op& send) override
  {
    message_.flows = {Flow{src_rank, send.peer, send.bytes, 1}};
    message_.copies = 1;
    return message_;
  }
  bool may_run_alone(const traces::Op&) const override { return false; }

private:
  CommWork collective_, message_;
};

// Every compute op lasts as long as its name says: "c<id>" takes (id + 1) seconds.
const ComputeDuration by_id = [](size_t, const traces::Op& op) { return static_cast<double>(op.id + 1); };

IterationResult run(const std::vector<traces::RankProgram>& programs, const std::vector<traces::CommGroup>& groups,
                    CommSource& comm)
{
  const topo::ClusterGraph graph(topo::load_cluster("dgx-a100", 1, {}));
  IterationOptions options;
  options.record_timeline = true;
  return execute_programs(graph, programs, groups, comm, by_id, options);
}

// (One execute_programs per test: SimGrid 3.32 builds one platform per process, and ctest runs each test alone.)
TEST(ProgramExecutor, StreamsOverlap)
{
  FixedComm comm(0);
  // Op 0 (1 s) on stream 0 and op 1 (2 s) on stream 1 at once: 2 s.
  traces::RankProgram parallel{0, {compute_op(0, 0), compute_op(1, 1)}};
  EXPECT_NEAR(run({parallel}, {}, comm).iteration_time_s, 2.0, 1e-9);
}

TEST(ProgramExecutor, ADependencyAcrossStreamsSerialises)
{
  FixedComm comm(0);
  traces::RankProgram chained{0, {compute_op(0, 0), compute_op(1, 1, {0})}};
  EXPECT_NEAR(run({chained}, {}, comm).iteration_time_s, 3.0, 1e-9);
}

TEST(ProgramExecutor, OneStreamRunsInIdOrder)
{
  FixedComm comm(0);
  traces::RankProgram one_stream{0, {compute_op(0, 0), compute_op(1, 0)}};
  EXPECT_NEAR(run({one_stream}, {}, comm).iteration_time_s, 3.0, 1e-9);
}

TEST(ProgramExecutor, ACollectiveStartsWhenItsLastMemberArrives)
{
  FixedComm comm(0.5);
  // Rank 0 computes 1 s, rank 1 computes 2 s (op id 1), then both all-reduce (0.5 s of latency): both end at
  // 2.5 s, rank 0 having waited 1 s for rank 1.
  auto program = [](int32_t rank, int64_t compute_id) {
    traces::RankProgram p{rank, {}};
    traces::Op c = compute_op(compute_id, 0);
    p.ops.push_back(c);
    traces::Op ar;
    ar.id = compute_id + 1;
    ar.kind = traces::OpKind::Collective;
    ar.name = "ar";
    ar.collective = CollectiveOp::AllReduce;
    ar.group = 0;
    ar.sequence = 0;
    ar.bytes = 1024;
    ar.stream = 0;
    p.ops.push_back(ar);
    return p;
  };
  const IterationResult r = run({program(0, 0), program(1, 1)}, {{"tp", {0, 1}}}, comm);
  EXPECT_NEAR(r.iteration_time_s, 2.5, 1e-9);
}

TEST(ProgramExecutor, AMessageArrivesAfterItsSendAndTheTransfer)
{
  FixedComm comm(0);
  // Rank 0 computes 1 s and sends 3 GB to rank 1 over NVLink; rank 1 receives, then computes (op id 2: 3 s).
  traces::Op send;
  send.id = 1;
  send.kind = traces::OpKind::Send;
  send.name = "pp.send_activation";
  send.peer = 1;
  send.sequence = 0;
  send.bytes = 3e9;
  send.stream = 2;
  send.deps = {0};
  traces::RankProgram sender{0, {compute_op(0, 0), send}};
  traces::Op recv = send;
  recv.id = 0;
  recv.kind = traces::OpKind::Recv;
  recv.name = "pp.recv_activation";
  recv.peer = 0;
  recv.stream = 1;
  recv.deps = {};
  traces::RankProgram receiver{1, {recv, compute_op(2, 0, {0})}};
  const IterationResult r = run({sender, receiver}, {}, comm);
  // 1 s + the transfer (3 GB over one NVLink path of the cluster: at most its 300 GB/s line rate, so at least
  // 10 ms, and well under 1 s) + 3 s.
  EXPECT_GT(r.iteration_time_s, 4.0 + 0.01);
  EXPECT_LT(r.iteration_time_s, 5.0);
}

} // namespace
} // namespace gputwin::sim
