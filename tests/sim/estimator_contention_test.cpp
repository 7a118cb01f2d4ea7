// The fast estimator's link sharing (dag_executor.cpp, add_contention): transfers that overlap in the
// contention-free schedule and share a link slow each other down as max-min sharing would, computed once as a
// fluid. Hand-computed cases on two DGX A100 nodes, pipeline messages whose flows are chosen by the test.
#include "gputwin/sim/comm_source.hpp"
#include "gputwin/sim/dag_executor.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

#include <map>

namespace gputwin::sim {
namespace {

using traces::Op;
using traces::OpKind;

// Messages whose flows the test sets: (sender rank, sequence) -> flows.
class FixedMessages : public CommSource {
public:
  std::map<std::pair<int32_t, int64_t>, CommWork> messages;
  const CommWork& collective(const Op&) override { return none_; }
  const CommWork& message(int32_t src_rank, const Op& send) override { return messages.at({src_rank, send.sequence}); }
  bool may_run_alone(const Op&) const override { return false; }

private:
  CommWork none_;
};

Op op_of(OpKind kind, int64_t id, int32_t peer = -1)
{
  Op op;
  op.kind = kind;
  op.id = id;
  op.name = kind == OpKind::Compute ? "k" : "p2p";
  op.peer = peer;
  op.sequence = 0;
  op.micro_batch = 0;
  op.stream = kind == OpKind::Compute ? 0 : 1;
  if (kind == OpKind::Send && id > 0)
    op.deps = {id - 1};
  return op;
}

struct Pair {
  int32_t src = 0, dst = 0;
  double delay_s = 0; // compute before the send
  CommWork flows;
};

// Each pair: the sender (a kernel of delay_s if any, then the send) and the receiver. Returns each send's end.
std::vector<double> send_ends(const topo::ClusterGraph& graph, const std::vector<Pair>& pairs)
{
  std::vector<traces::RankProgram> programs;
  FixedMessages comm;
  std::map<std::pair<int32_t, int64_t>, double> delay;
  for (const Pair& p : pairs) {
    traces::RankProgram sender, receiver;
    sender.rank = p.src;
    if (p.delay_s > 0)
      sender.ops.push_back(op_of(OpKind::Compute, 0));
    sender.ops.push_back(op_of(OpKind::Send, static_cast<int64_t>(sender.ops.size()), p.dst));
    receiver.rank = p.dst;
    receiver.ops.push_back(op_of(OpKind::Recv, 0, p.src));
    programs.push_back(sender);
    programs.push_back(receiver);
    comm.messages[{p.src, 0}] = p.flows;
    delay[{p.src, 0}] = p.delay_s;
  }
  const std::vector<traces::RankProgram> copy = programs;
  const ComputeDuration compute_s = [&](size_t program, const Op&) { return delay.at({copy[program].rank, 0}); };
  IterationOptions options;
  options.record_timeline = true;
  const IterationResult r = execute_dag(graph, programs, {}, comm, compute_s, {}, options);
  std::vector<double> ends;
  for (const OpSlice& s : r.timeline)
    if (r.programs[static_cast<size_t>(s.program)].ops[static_cast<size_t>(s.op)].kind == OpKind::Send)
      ends.push_back(s.end_s);
  return ends;
}

CommWork flow(int src_gpu, int dst_gpu, double bytes)
{
  CommWork w;
  w.flows.push_back({src_gpu, dst_gpu, bytes, 1});
  w.copies = 1;
  return w;
}

class Contention : public ::testing::Test {
protected:
  const topo::ClusterSpec spec = topo::load_cluster("dgx-a100", 2, {});
  const topo::ClusterGraph graph{spec};
  const double bytes = 1e9;
  // GPU 0 -> GPU 8 (node 0 to node 1, rail 0) alone: route latency + bytes / bottleneck.
  const double alone_s = contention_free_duration_s(graph, flow(0, 8, bytes));
  const double latency_s = contention_free_duration_s(graph, flow(0, 8, 0));
  const double transfer_s = alone_s - latency_s;
};

TEST_F(Contention, TransfersOnDifferentLinksKeepTheirTimeExactly)
{
  // Rail 0 and rail 1: different NICs and leaf switches.
  const std::vector<double> ends = send_ends(graph, {{0, 8, 0, flow(0, 8, bytes)}, {1, 9, 0, flow(1, 9, bytes)}});
  ASSERT_EQ(ends.size(), 2U);
  EXPECT_EQ(ends[0], alone_s);
  EXPECT_EQ(ends[1], contention_free_duration_s(graph, flow(1, 9, bytes)));
}

TEST_F(Contention, TwoEqualTransfersStartingTogetherEachTakeTwiceAsLong)
{
  const std::vector<double> ends = send_ends(graph, {{0, 8, 0, flow(0, 8, bytes)}, {1, 9, 0, flow(0, 8, bytes)}});
  ASSERT_EQ(ends.size(), 2U);
  for (const double end : ends)
    EXPECT_NEAR(end, latency_s + 2 * transfer_s, 1e-12);
}

TEST_F(Contention, ALaterTransferSharesOnlyWhileBothRun)
{
  // The second starts half-way: max-min gives the first 1.5 T and the second ends at 2 T.
  const double half = transfer_s / 2;
  const std::vector<double> ends =
      send_ends(graph, {{0, 8, 0, flow(0, 8, bytes)}, {1, 9, half, flow(0, 8, bytes)}});
  ASSERT_EQ(ends.size(), 2U);
  EXPECT_NEAR(ends[0], latency_s + 1.5 * transfer_s, 1e-12);
  EXPECT_NEAR(ends[1], latency_s + 2 * transfer_s, 1e-12);
}

TEST_F(Contention, AShortTransferInsideALongOneTakesTwiceAsLongAndTheLongOneGainsItsBytes)
{
  const std::vector<double> ends =
      send_ends(graph, {{0, 8, 0, flow(0, 8, 10 * bytes)}, {1, 9, 0, flow(0, 8, bytes)}});
  ASSERT_EQ(ends.size(), 2U);
  EXPECT_NEAR(ends[0], latency_s + 11 * transfer_s, 1e-9);
  EXPECT_NEAR(ends[1], latency_s + 2 * transfer_s, 1e-12);
}

} // namespace
} // namespace gputwin::sim
