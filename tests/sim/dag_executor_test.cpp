// The fast executor and the host issue model (dag_executor.hpp, framework_profile.hpp): hand-computed timings.
#include "gputwin/sim/dag_executor.hpp"

#include "gputwin/common/input_error.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace gputwin::sim {
namespace {

using traces::Op;
using traces::OpKind;

Op compute(int64_t id, int32_t stream = 0, std::vector<int64_t> deps = {})
{
  Op op;
  op.id = id;
  op.kind = OpKind::Compute;
  op.name = "k";
  op.stream = stream;
  op.deps = std::move(deps);
  op.micro_batch = 0;
  return op;
}

traces::RankProgram chain(int32_t rank, int n)
{
  traces::RankProgram p;
  p.rank = rank;
  for (int i = 0; i < n; ++i)
    p.ops.push_back(compute(i));
  return p;
}

HostProgram host_of(size_t ops, double issue_s, double launch_s = 0)
{
  HostProgram h;
  h.issue_cost_s.assign(ops, issue_s);
  h.syncs.assign(ops, false);
  h.launch_latency_s = launch_s;
  return h;
}

double run(const std::vector<traces::RankProgram>& programs, const std::vector<traces::CommGroup>& groups,
           double kernel_s, double comm_s, const std::vector<HostProgram>& hosts)
{
  const auto compute_s = [&](size_t, const Op&) { return kernel_s; };
  const auto comm = [&](size_t, const Op&) { return comm_s; };
  return execute_dag(programs, groups, compute_s, comm, hosts).iteration_time_s;
}

TEST(HostIssue, ShortKernelsAreHostBoundLongOnesAreNot)
{
  const std::vector<traces::RankProgram> programs{chain(0, 100)};
  // 1 us kernels issued every 5 us: the last is issued at 500 us and ends 1 us later (+ 2 us launch latency).
  EXPECT_NEAR(run(programs, {}, 1e-6, 0, {host_of(100, 5e-6, 2e-6)}), 503e-6, 1e-12);
  // 10 us kernels: the host runs ahead; only the first issue and launch are exposed.
  EXPECT_NEAR(run(programs, {}, 10e-6, 0, {host_of(100, 5e-6, 2e-6)}), 7e-6 + 100 * 10e-6, 1e-12);
  // No host: the GPU alone.
  EXPECT_NEAR(run(programs, {}, 10e-6, 0, {}), 100 * 10e-6, 1e-12);
}

TEST(HostIssue, ASynchronisingOpMakesTheHostWaitForTheGpu)
{
  const std::vector<traces::RankProgram> programs{chain(0, 4)};
  HostProgram host = host_of(4, 1e-6);
  host.syncs[1] = true; // after op 1 the host waits until ops 0 and 1 have ended (at 2 x 10 us + 1 us)
  // op 2 issued at 21 + 1 us, runs 22..32; op 3 issued at 23, runs 32..42.
  EXPECT_NEAR(run(programs, {}, 10e-6, 0, {host}), 42e-6, 1e-12);
}

TEST(DagExecutor, CollectiveStartsWhenItsLastMemberArrivesAndReceivesWaitForTheirSend)
{
  traces::RankProgram a = chain(0, 2), b = chain(1, 1);
  Op all_reduce;
  all_reduce.kind = OpKind::Collective;
  all_reduce.group = 0;
  all_reduce.sequence = 0;
  all_reduce.id = 2;
  a.ops.push_back(all_reduce);
  all_reduce.id = 1;
  b.ops.push_back(all_reduce);
  Op send;
  send.kind = OpKind::Send;
  send.id = 3;
  send.peer = 1;
  send.sequence = 0;
  send.stream = 2;
  send.deps = {2};
  a.ops.push_back(send);
  Op recv;
  recv.kind = OpKind::Recv;
  recv.id = 2;
  recv.peer = 0;
  recv.sequence = 0;
  recv.stream = 1;
  b.ops.push_back(recv);
  b.ops.push_back(compute(3, 0, {2}));
  // a: 2 kernels (20 us), b: 1 (10 us); all-reduce 20..25 on both; a's send 25..30; b's last kernel 30..40.
  EXPECT_NEAR(run({a, b}, {{"tp", {0, 1}}}, 10e-6, 5e-6, {}), 40e-6, 1e-12);
}

TEST(DagExecutor, AProgramThatCannotFinishIsNamed)
{
  traces::RankProgram a = chain(0, 1);
  Op recv;
  recv.kind = OpKind::Recv;
  recv.id = 1;
  recv.peer = 1;
  recv.sequence = 0;
  a.ops.push_back(recv);
  traces::RankProgram b;
  b.rank = 1;
  Op wait_first;
  wait_first.kind = OpKind::Recv;
  wait_first.id = 0;
  wait_first.peer = 0;
  wait_first.sequence = 0;
  b.ops.push_back(wait_first);
  Op send;
  send.kind = OpKind::Send;
  send.id = 1;
  send.peer = 0;
  send.sequence = 0;
  send.deps = {0};
  send.stream = 1;
  b.ops.push_back(send);
  Op send_a;
  send_a.kind = OpKind::Send;
  send_a.id = 2;
  send_a.peer = 1;
  send_a.sequence = 0;
  send_a.deps = {1};
  send_a.stream = 2;
  a.ops.push_back(send_a);
  try {
    run({a, b}, {}, 1e-6, 1e-6, {});
    FAIL() << "a deadlock must throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot finish"), std::string::npos) << e.what();
  }
}

TEST(FrameworkProfile, HostCostsPerKindStepAndOptimizer)
{
  FrameworkProfile f = builtin_framework_profile("none");
  f.kernel_issue_s = 1;
  f.gemm_issue_s = 2;
  f.collective_issue_s = 4;
  f.p2p_issue_s = 8;
  f.microbatch_issue_s = 16;
  f.iteration_issue_s = 32;
  f.sync_after_p2p = true;
  f.sync_before_optimizer = true;
  traces::RankProgram p;
  Op gemm = compute(0);
  gemm.gemm = {8, 8, 8, 1};
  p.ops.push_back(gemm);                       // first op of micro-batch 0: 2 + 16
  p.ops.push_back(compute(1));                 // 1
  Op next = compute(2);
  next.micro_batch = 1;
  p.ops.push_back(next);                       // a new step: 1 + 16
  Op send;
  send.kind = OpKind::Send;
  send.id = 3;
  send.micro_batch = 1;
  p.ops.push_back(send);                       // 8, synchronises
  Op reduce;
  reduce.kind = OpKind::Collective;
  reduce.id = 4;
  reduce.phase = traces::Phase::Optimizer;
  p.ops.push_back(reduce);                     // 4 + 32 (first optimizer op); the last before the update
  Op adam = compute(5);
  adam.phase = traces::Phase::Optimizer;
  adam.micro_batch = -1;
  p.ops.push_back(adam);                       // 1
  const HostProgram h = host_program(f, p);
  EXPECT_EQ(h.issue_cost_s, (std::vector<double>{18, 1, 17, 8, 36, 1}));
  EXPECT_EQ(h.syncs, (std::vector<bool>{false, false, false, true, true, false}));
  EXPECT_THROW(builtin_framework_profile("pytorch-xla"), InputError);
}

Op p2p(int64_t id, OpKind kind, traces::Phase phase, int32_t micro_batch, int32_t chunk)
{
  Op op;
  op.id = id;
  op.kind = kind;
  op.phase = phase;
  op.micro_batch = micro_batch;
  op.chunk = chunk;
  return op;
}

Op layer_op(int64_t id, traces::Phase phase, int32_t layer, int32_t micro_batch, int32_t chunk = 0)
{
  Op op = compute(id);
  op.phase = phase;
  op.layer = layer;
  op.micro_batch = micro_batch;
  op.chunk = chunk;
  return op;
}

// Megatron's combined p2p calls batch adjacent sends and receives and synchronise once, after the batch; the 2022
// interleaved schedule does not synchronise between a steady-state forward and its backward; Megatron-Core's
// interleaved schedule (overlap_p2p_comm) never does, its 1F1B still does.
TEST(FrameworkProfile, P2pSyncsPerBatchAndPerSchedule)
{
  using traces::Phase;
  // forward (chunk c), send + receive batch, backward, send + receive batch, forward.
  const auto program = [](int32_t chunk) {
    traces::RankProgram p;
    p.ops = {layer_op(0, Phase::Forward, 0, 0, chunk),
             p2p(1, OpKind::Send, Phase::Forward, 0, chunk),
             p2p(2, OpKind::Recv, Phase::Backward, 0, chunk),
             layer_op(3, Phase::Backward, 0, 0, chunk),
             p2p(4, OpKind::Send, Phase::Backward, 0, chunk),
             p2p(5, OpKind::Recv, Phase::Forward, 1, chunk),
             layer_op(6, Phase::Forward, 0, 1, chunk)};
    return p;
  };
  const std::vector<bool> batch_end = {false, false, true, false, false, true, false};
  const std::vector<bool> backward_batch_only = {false, false, false, false, false, true, false};
  const std::vector<bool> never(7, false);
  const FrameworkProfile lm = builtin_framework_profile("megatron-lm");
  const FrameworkProfile core = builtin_framework_profile("megatron-core");
  EXPECT_EQ(host_program(lm, program(0)).syncs, batch_end);            // 1F1B: once per batch
  EXPECT_EQ(host_program(core, program(0)).syncs, batch_end);          // Megatron-Core 1F1B: the same
  EXPECT_EQ(host_program(lm, program(1)).syncs, backward_batch_only);  // 2022 interleaved: not between F and B
  EXPECT_EQ(host_program(core, program(1)).syncs, never);              // overlap_p2p_comm
  EXPECT_EQ(builtin_framework_profile("nemo").overlap_p2p_interleaved, true);
  // Megatron-LM's training loop aligns the gradient reductions (config.grad_sync_func), NeMo's does not; the 2022
  // Megatron had no overlapped reduction to align.
  EXPECT_TRUE(core.align_grad_reduce);
  EXPECT_FALSE(builtin_framework_profile("nemo").align_grad_reduce);
  EXPECT_FALSE(lm.align_grad_reduce);
}

// Per-layer CUDA graphs: one launch per (layer, micro-batch, direction) group at its first op, nothing for the
// rest; ops outside layers (p2p, optimizer) keep their eager costs.
TEST(FrameworkProfile, CudaGraphsLaunchOncePerLayerStep)
{
  using traces::Phase;
  FrameworkProfile f = builtin_framework_profile("none");
  f.kernel_issue_s = 1;
  f.gemm_issue_s = 2;
  f.p2p_issue_s = 8;
  f.cuda_graphs = true;
  f.graph_launch_s = 100;
  traces::RankProgram p;
  p.ops = {layer_op(0, Phase::Forward, 0, 0), layer_op(1, Phase::Forward, 0, 0),   // layer 0: one launch
           layer_op(2, Phase::Forward, 1, 0), layer_op(3, Phase::Forward, 1, 0),   // layer 1: one launch
           p2p(4, OpKind::Send, Phase::Forward, 0, 0),                             // eager
           layer_op(5, Phase::Backward, 1, 0), layer_op(6, Phase::Backward, 1, 0),  // backward of layer 1
           layer_op(7, Phase::Recompute, 0, 0), layer_op(8, Phase::Backward, 0, 0)}; // recompute, backward: two
  const HostProgram h = host_program(f, p);
  EXPECT_EQ(h.issue_cost_s, (std::vector<double>{100, 0, 100, 0, 8, 100, 0, 100, 100}));
  f.cuda_graphs = false;
  EXPECT_EQ(host_program(f, p).issue_cost_s, (std::vector<double>{1, 1, 1, 1, 8, 1, 1, 1, 1}));
}

// Transformer Engine's GroupedLinear issues one GEMM per local expert from the host (grouped_linear.py,
// nvte_multi_stream_cublas_gemm): a grouped GEMM of 16 experts costs 16 GEMM calls, one batched kernel (attention's
// scores over heads) one; a captured layer costs its graph launch whatever it holds.
TEST(FrameworkProfile, GroupedGemmsCostOneHostCallPerExpert)
{
  FrameworkProfile f = builtin_framework_profile("none");
  f.kernel_issue_s = 1;
  f.gemm_issue_s = 2;
  f.graph_launch_s = 100;
  traces::RankProgram p;
  p.ops = {layer_op(0, traces::Phase::Forward, 0, 0), layer_op(1, traces::Phase::Forward, 0, 0),
           layer_op(2, traces::Phase::Forward, 0, 0)};
  p.ops[1].gemm = {256, 768, 2048, 16};
  p.ops[1].gemm.grouped = true;
  p.ops[2].gemm = {4096, 4096, 128, 32}; // batched, one kernel
  EXPECT_EQ(host_program(f, p).issue_cost_s, (std::vector<double>{1, 32, 2}));
  f.expert_gemm_issue_s = 5; // a profile's own per-expert cost (framework YAML expert_gemm_issue_s)
  EXPECT_EQ(host_program(f, p).issue_cost_s, (std::vector<double>{1, 80, 2}));
  EXPECT_EQ(host_program(on_host_cpu(f, 2), p).issue_cost_s, (std::vector<double>{2, 160, 4}));
  f.cuda_graphs = true;
  EXPECT_EQ(host_program(f, p).issue_cost_s, (std::vector<double>{100, 0, 0}));
}

} // namespace
} // namespace gputwin::sim
