// --tp-comm-overlap's chunk collectives as Transformer Engine userbuffers transfers (sim/collectives
// userbuffers_cost.hpp): `tp.ring_exchange` and `tp.reduce_scatter_chunk` pay the cluster's userbuffers latency,
// not NCCL's call cost, keep their bytes on the real links, and load the interference model with TE's CTAs (1 for
// the copy-engine ring's flag kernel, 16 for the reduce-scatter); every other collective is costed as before (NCCL).
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/models/layer_ops.hpp"
#include "gputwin/models/op_vocabulary.hpp"
#include "gputwin/models/rank_layout.hpp"
#include "gputwin/sim/comm_expansion.hpp"
#include "gputwin/sim/interference.hpp"
#include "gputwin/sim/userbuffers_cost.hpp"
#include "gputwin/topologies/cluster_graph.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace gputwin::sim {
namespace {

GptConfig model()
{
  return GptConfig{"test", 1024, 16, 8, 512, 1024};
}

// tp 4 with SP on one DGX H100 (the TP group is GPUs 0-3), pp 2.
Workload workload(bool overlap)
{
  ParallelPlan p;
  p.tp = 4;
  p.pp = 2;
  p.dp = 1;
  p.micro_batch = 2;
  p.global_batch = 4;
  p.tp_comm = TpComm::SequenceParallel;
  validate_plan(model(), p);
  WorkloadOptions options;
  options.tp_comm_overlap = overlap;
  return make_workload(model(), p, options);
}

const traces::Op& first_named(const traces::RankProgram& program, const std::string& name)
{
  for (const traces::Op& op : program.ops)
    if (op.name == name)
      return op;
  throw std::runtime_error("no op named " + name);
}

std::vector<int> tp_gpus(const Workload& w)
{
  const std::vector<int32_t> ranks = tp_group_ranks(w.plan, 0, 0, 0);
  return {ranks.begin(), ranks.end()};
}

TEST(UserbuffersCost, ChunkOpsAreKnownByTheirVocabularyNames)
{
  const Workload w = workload(true);
  const traces::RankProgram program = stage_program(w, 0);
  EXPECT_EQ(userbuffers_op(first_named(program, "tp.ring_exchange")), UserbuffersOp::RingExchange);
  EXPECT_EQ(userbuffers_op(first_named(program, "tp.reduce_scatter_chunk")), UserbuffersOp::ReduceScatter);
  // The bulk (qkv/fc1 backward) and embedding collectives stay NCCL calls.
  EXPECT_EQ(userbuffers_op(first_named(program, "tp.reduce_scatter")), UserbuffersOp::None);
  EXPECT_EQ(userbuffers_op(first_named(program, "tp.all_gather")), UserbuffersOp::None);
  const Workload plain = workload(false);
  for (const traces::Op& op : stage_program(plain, 0).ops)
    EXPECT_EQ(userbuffers_op(op), UserbuffersOp::None) << op.name;
}

TEST(UserbuffersCost, ChunkOpsPayTheUserbuffersLatencyNotNccls)
{
  const topo::ClusterSpec cluster = topo::load_cluster("dgx-h100", 1, {});
  EXPECT_DOUBLE_EQ(cluster.nccl.userbuffers_latency_s, 4e-6); // dgx-h100.yaml, sourced there
  const Workload w = workload(true);
  const traces::RankProgram program = stage_program(w, 0);
  CommExpander expander(cluster, w);
  const std::vector<int> gpus = tp_gpus(w);
  const int n = static_cast<int>(gpus.size());

  const traces::Op& ring = first_named(program, "tp.ring_exchange");
  const CommWork& ring_work = expander.collective(ring);
  EXPECT_DOUBLE_EQ(ring_work.latency_s, 4e-6);
  EXPECT_EQ(ring_work.channels, 1); // the receiver's flag kernel
  // The same SendRecv as a NCCL call pays NCCL's kernel, protocol base and step (17.4 us Simple on the built-in
  // figures, Echo's A100 fit).
  const CollectivePlan nccl_ring = plan_collective(cluster, CollectiveOp::SendRecv, gpus, ring.bytes);
  EXPECT_GT(nccl_ring.choice.latency_s, 4 * ring_work.latency_s);
  // A ring: every GPU sends one slice to the next and receives one, no protocol overhead.
  ASSERT_EQ(ring_work.flows.size(), static_cast<size_t>(n));
  std::map<int, double> sent, received;
  for (const Flow& f : ring_work.flows) {
    sent[f.src_gpu] += f.bytes;
    received[f.dst_gpu] += f.bytes;
    EXPECT_EQ(f.dst_gpu, gpus[static_cast<size_t>((f.src_gpu - gpus.front() + 1) % n)]);
  }
  for (const int g : gpus) {
    EXPECT_DOUBLE_EQ(sent[g], ring.bytes);
    EXPECT_DOUBLE_EQ(received[g], ring.bytes);
  }

  const traces::Op& chunk = first_named(program, "tp.reduce_scatter_chunk");
  const CommWork& chunk_work = expander.collective(chunk);
  EXPECT_DOUBLE_EQ(chunk_work.latency_s, 4e-6);
  EXPECT_EQ(chunk_work.channels, userbuffers_reduce_scatter_ctas);
  EXPECT_EQ(chunk_work.channels, 16);
  double chunk_bytes = 0;
  for (const Flow& f : chunk_work.flows)
    chunk_bytes += f.bytes;
  EXPECT_DOUBLE_EQ(chunk_bytes, chunk.bytes * (n - 1)); // (n-1)/n of the chunk out of each of n GPUs
  EXPECT_EQ(chunk_work.flows.size(), static_cast<size_t>(n * (n - 1)));

  // The same bytes under the plain reduce-scatter's name are a NCCL call: NCCL's latency and channels. The cache
  // must not hand one the other's cost.
  traces::Op renamed = chunk;
  renamed.name = op_name(OpName::TpReduceScatter);
  const CommWork& nccl_work = expander.collective(renamed);
  const CollectivePlan nccl = plan_collective(cluster, CollectiveOp::ReduceScatter, gpus, chunk.bytes);
  EXPECT_DOUBLE_EQ(nccl_work.latency_s, nccl.choice.latency_s);
  EXPECT_GT(nccl_work.latency_s, chunk_work.latency_s); // this small chunk: NCCL's LL, 8.7 us
  EXPECT_EQ(nccl_work.channels, nccl.nccl_channels);
  EXPECT_DOUBLE_EQ(expander.collective(chunk).latency_s, 4e-6);

  // At the sizes --tp-comm-overlap moves on real models (a llama3-8b ring step is 8 MiB) NCCL runs Simple: its
  // 11.7 us base, 3.9 us kernel and per-step and per-channel costs (SendRecv 17.4 us, reduce-scatter 57.7 us)
  // against userbuffers' 4 us.
  const double step_bytes = 8.0 * (1 << 20);
  EXPECT_GT(plan_collective(cluster, CollectiveOp::SendRecv, gpus, step_bytes).choice.latency_s, 15e-6);
  EXPECT_GT(plan_collective(cluster, CollectiveOp::ReduceScatter, gpus, step_bytes).choice.latency_s, 50e-6);
  EXPECT_DOUBLE_EQ(plan_userbuffers(cluster, UserbuffersOp::RingExchange, gpus, step_bytes).choice.latency_s, 4e-6);
  EXPECT_DOUBLE_EQ(plan_userbuffers(cluster, UserbuffersOp::ReduceScatter, gpus, step_bytes).choice.latency_s, 4e-6);
}

TEST(UserbuffersCost, PlainNcclCollectivesAreUnchanged)
{
  // Without the option every collective's work is exactly plan_collective's (latency, channels, flows).
  const topo::ClusterSpec cluster = topo::load_cluster("dgx-h100", 1, {});
  const Workload w = workload(false);
  CommExpander expander(cluster, w);
  const std::vector<int> gpus = tp_gpus(w);
  int checked = 0;
  for (const traces::Op& op : stage_program(w, 0).ops) {
    if (op.kind != traces::OpKind::Collective || op.group != w.tp_group(0))
      continue;
    const CommWork& work = expander.collective(op);
    const CollectivePlan plan = plan_collective(cluster, op.collective, gpus, op.bytes);
    EXPECT_DOUBLE_EQ(work.latency_s, plan.choice.latency_s) << op.name;
    EXPECT_EQ(work.channels, plan.nccl_channels) << op.name;
    ASSERT_EQ(work.flows.size(), plan.flows.size()) << op.name;
    for (size_t i = 0; i < work.flows.size(); ++i)
      EXPECT_DOUBLE_EQ(work.flows[i].bytes, plan.flows[i].bytes);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(UserbuffersCost, LatencyComesFromTheClusterFile)
{
  // dgx-a100.yaml leaves the field out: NcclSpec's default. --set on dgx-h100 changes it and the ops' cost.
  EXPECT_DOUBLE_EQ(topo::load_cluster("dgx-a100", 1, {}).nccl.userbuffers_latency_s, topo::NcclSpec{}.userbuffers_latency_s);
  const topo::ClusterSpec fast = topo::load_cluster("dgx-h100", 1, {"nccl.userbuffers_latency_us=1.5"});
  EXPECT_DOUBLE_EQ(fast.nccl.userbuffers_latency_s, 1.5e-6);
  const Workload w = workload(true);
  CommExpander expander(fast, w);
  EXPECT_DOUBLE_EQ(expander.collective(first_named(stage_program(w, 0), "tp.ring_exchange")).latency_s, 1.5e-6);
  EXPECT_THROW(topo::load_cluster("dgx-h100", 1, {"nccl.userbuffers_latency_us=-1"}), std::exception);
}

TEST(UserbuffersCost, InterferenceChargesTesCtasNotNcclChannels)
{
  const topo::ClusterGraph graph(topo::load_cluster("dgx-h100", 1, {}));
  const GpuComputeModel gpu = builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", 989e12, 3.35e12);
  const Workload w = workload(true);
  const traces::RankProgram program = stage_program(w, 0);
  CommExpander expander(graph, w);
  const traces::Op& ring = first_named(program, "tp.ring_exchange");
  const CommLoad ring_load = comm_op_load(graph, gpu, expander.collective(ring), ring, 0);
  EXPECT_EQ(ring_load.channels, 1);        // copy engine: the flag kernel's SM only
  EXPECT_GT(ring_load.hbm_bytes_per_s, 0); // ... and its HBM traffic
  const traces::Op& chunk = first_named(program, "tp.reduce_scatter_chunk");
  EXPECT_EQ(comm_op_load(graph, gpu, expander.collective(chunk), chunk, 0).channels, 16);
  const CommLoad chunk_load = comm_op_load(graph, gpu, expander.collective(chunk), chunk, 0);
  EXPECT_GT(chunk_load.hbm_bytes_per_s, 0);
  // TE launches the pipelined GEMM with an SM margin for the reduce-scatter's CTAs (set_sm_margin): the generated
  // proj.fwd chunks hold back 16 SMs for their whole duration, so the reduce-scatter in flight beside them takes
  // nothing more.
  traces::Op gemm = first_named(program, "proj.fwd");
  EXPECT_EQ(gemm.gemm.comm_sms, userbuffers_margin_sms);
  gemm.gemm.m = 16384;
  gemm.gemm.n = 8192;
  gemm.gemm.k = 8192;
  gemm.flops = 2.0 * 16384 * 8192 * 8192;
  gemm.bytes = 2.0 * (16384.0 * 8192 + 8192.0 * 8192 + 16384.0 * 8192);
  EXPECT_DOUBLE_EQ(interference_rate(gpu, gemm, CommLoad{chunk_load.channels, 0}), 1.0);
  traces::Op full_gpu = gemm;
  full_gpu.gemm.comm_sms = 0;
  EXPECT_GT(compute_duration_s(gpu, gemm), 1.05 * compute_duration_s(gpu, full_gpu)); // 116 of 132 SMs
  // A large GEMM launched on every SM (more tiles than SMs) beside the ring step loses 1 SM of 132, beside the
  // reduce-scatter 16: much slower there.
  const double ring_rate = interference_rate(gpu, full_gpu, CommLoad{ring_load.channels, 0});
  EXPECT_GT(ring_rate, 0.95);
  EXPECT_LT(interference_rate(gpu, full_gpu, CommLoad{chunk_load.channels, 0}), 0.95);
  EXPECT_LT(interference_rate(gpu, full_gpu, CommLoad{chunk_load.channels, 0}), ring_rate);
}

TEST(UserbuffersCost, BadInputIsRejected)
{
  const topo::ClusterSpec cluster = topo::load_cluster("dgx-h100", 1, {});
  EXPECT_THROW(plan_userbuffers(cluster, UserbuffersOp::None, {0, 1}, 1e6), std::invalid_argument);
  EXPECT_THROW(plan_userbuffers(cluster, UserbuffersOp::RingExchange, {0, 0}, 1e6), std::invalid_argument);
  EXPECT_THROW(plan_userbuffers(cluster, UserbuffersOp::RingExchange, {0, 99}, 1e6), std::invalid_argument);
  EXPECT_TRUE(plan_userbuffers(cluster, UserbuffersOp::ReduceScatter, {3}, 1e6).flows.empty());
}

} // namespace
} // namespace gputwin::sim
