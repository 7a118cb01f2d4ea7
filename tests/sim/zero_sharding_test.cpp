// ZeRO-3 against ZeRO-1 end to end, with the fast estimator on a two-node DGX-like cluster (data parallelism across
// the nodes): on a slow fabric ZeRO-3 is slower by the all-gathers it adds, each timed alone as NCCL would run it;
// on a fast one its prefetched gathers hide behind the layers' compute and the two stay close.
#include "dgx_spec.hpp"

#include "gputwin/models/framework_profile.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/parameter_count.hpp"
#include "gputwin/sim/collective_plan.hpp"
#include "gputwin/sim/iteration_estimate.hpp"
#include "gputwin/sim/plan_search.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace gputwin::sim {
namespace {

// Llama 3 8B's layers, four of them: each layer's GEMMs take longer than its all-gather over 25 GB/s NICs at
// micro-batch 4, so a prefetched gather can hide.
GptConfig four_layer_llama()
{
  GptConfig m = find_catalog_model("llama3-8b")->model;
  m.layers = 4;
  m.seq_len = 4096;
  return m;
}

// dp 16 over two nodes (tp 1, pp 1), micro-batch 4, one micro-batch per replica.
ParallelPlan plan_with_zero(int zero)
{
  ParallelPlan p;
  p.dp = 16;
  p.micro_batch = 4;
  p.global_batch = 64;
  p.zero_stage = zero;
  return p;
}

// The cluster, its GPU model without compute-communication interference (these tests are about which transfers
// the schedule exposes; ZeRO-3's gathers slowing the kernels they overlap is the interference model's, tested there).
struct Cluster {
  explicit Cluster(const topo::ClusterSpec& spec)
      : graph(spec), gpu(builtin_compute_model(GpuGeneration::Ampere, spec.gpu.kind, spec.gpu.peak_bf16_flops,
                                               spec.gpu.hbm_bytes_per_s))
  {
    gpu.comm_interference.enabled = false;
  }
  double iteration_s(const ParallelPlan& plan, const WorkloadOptions& options, bool no_communication = false) const
  {
    IterationOptions run;
    run.zero_communication = no_communication;
    return estimate_iteration(graph, make_workload(four_layer_llama(), plan, options), gpu,
                              builtin_framework_profile("none"), run)
        .iteration_time_s;
  }
  // One all-gather of `bytes` over the 16 data-parallel GPUs, alone, as NCCL runs it.
  double all_gather_s(double bytes) const
  {
    return nccl_tests_call_s(plan_collective(graph.spec(), CollectiveOp::AllGather, testing::first_gpus(16), bytes));
  }
  double reduce_scatter_s(double bytes) const
  {
    return nccl_tests_call_s(
        plan_collective(graph.spec(), CollectiveOp::ReduceScatter, testing::first_gpus(16), bytes));
  }
  // Every all-gather of ZeRO-3's one micro-batch, in BF16: forward the embedding, the layers and the output layer
  // (Llama's own output matrix and the final norm), backward the layers and the embedding.
  double zero3_gathers_s() const
  {
    const ShardedUnits u = sharded_units(four_layer_llama(), plan_with_zero(3), 0);
    const double layer = all_gather_s(2.0 * static_cast<double>(u.layer));
    return 2 * all_gather_s(2.0 * static_cast<double>(u.embedding)) +
           all_gather_s(2.0 * static_cast<double>(u.output_gathered)) + 2 * static_cast<double>(u.layers) * layer;
  }
  topo::ClusterGraph graph;
  GpuComputeModel gpu;
};

TEST(ZeroSharding, OnASlowFabricZero3IsSlowerByTheGathersItAdds)
{
  topo::ClusterSpec spec = testing::dgx_like_spec(2, false);
  spec.nic.bytes_per_s = 0.02e9; // 160 Mb/s per GPU: communication dwarfs the compute
  const Cluster cluster(spec);
  const double zero1_s = cluster.iteration_s(plan_with_zero(1), {});
  const double zero3_s = cluster.iteration_s(plan_with_zero(3), {});
  const double compute_s = cluster.iteration_s(plan_with_zero(1), {}, true);
  // ZeRO-1 gathers the updated parameters once, after the step; ZeRO-3 every unit before its forward and again
  // before its backward. Both reduce-scatter the same gradient bytes. The difference is the extra gathers, less
  // whatever compute ZeRO-3 hides behind them (at most all of it).
  const int64_t params = stage_parameters_per_gpu(four_layer_llama(), plan_with_zero(1), 0);
  const double zero1_gather_s = cluster.all_gather_s(2.0 * static_cast<double>(data_parallel_buffer_elements(params, 16)));
  const double extra_s = cluster.zero3_gathers_s() - zero1_gather_s;
  ASSERT_GT(extra_s, 10 * compute_s);
  EXPECT_GT(zero3_s, zero1_s);
  EXPECT_NEAR(zero3_s - zero1_s, extra_s, compute_s + 0.05 * extra_s)
      << "ZeRO-1 " << zero1_s << " s, ZeRO-3 " << zero3_s << " s, compute " << compute_s << " s, extra gathers "
      << extra_s << " s";
}

TEST(ZeroSharding, OnAFastFabricPrefetchHidesZero3sGathers)
{
  const Cluster cluster(testing::dgx_like_spec(2, false));
  // Each plan with the overlaps Megatron-Core users run (ZeRO-1: per-layer reductions in the backward, gathers in the
  // next forward; ZeRO-3's are built in).
  const double zero1_s = cluster.iteration_s(plan_with_zero(1), applicable_overlaps(plan_with_zero(1)));
  const double zero3_s = cluster.iteration_s(plan_with_zero(3), applicable_overlaps(plan_with_zero(3)));
  const double compute_s = cluster.iteration_s(plan_with_zero(3), {}, true);
  // What nothing can hide: the embedding's and the first layer's gathers, issued before any compute, and the
  // reduce-scatters of the first layer and the embedding, after (or beside the short) embedding backward. Every
  // other gather and reduce-scatter -- 2 x 4 - 1 layers' and the output layer's, most of the traffic -- overlaps a
  // layer's compute.
  const ShardedUnits u = sharded_units(four_layer_llama(), plan_with_zero(3), 0);
  const double unhidden_s = cluster.all_gather_s(2.0 * static_cast<double>(u.embedding)) +
                            cluster.all_gather_s(2.0 * static_cast<double>(u.layer)) +
                            cluster.reduce_scatter_s(4.0 * static_cast<double>(u.layer)) +
                            cluster.reduce_scatter_s(4.0 * static_cast<double>(u.embedding));
  ASSERT_GT(cluster.zero3_gathers_s(), unhidden_s);
  EXPECT_LE(zero3_s - compute_s, 1.02 * unhidden_s)
      << "ZeRO-3 " << zero3_s << " s, compute " << compute_s << " s, its gathers alone " << cluster.zero3_gathers_s()
      << " s";
  // Twice ZeRO-1's gather bytes, yet within 2 % of its iteration.
  EXPECT_LT(std::abs(zero3_s - zero1_s), 0.02 * zero1_s) << "ZeRO-1 " << zero1_s << " s, ZeRO-3 " << zero3_s << " s";
}

} // namespace
} // namespace gputwin::sim
