// ComputeDurationMemo: the same double as compute_duration_s for every op of real workloads (BF16 and FP8, flash
// attention, TP comm overlap's SM margin, measured durations), each distinct op computed once, and no two ops that
// compute_duration_s tells apart sharing an entry.
#include "gputwin/models/compute_duration_memo.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/workload.hpp"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

namespace gputwin {
namespace {

GpuComputeModel h100()
{
  return builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", 989e12, 3350e9, 1979e12);
}

TEST(ComputeDurationMemo, EqualsTheModelOnEveryOpOfRealWorkloads)
{
  const GpuComputeModel gpu = h100();
  struct Case {
    const char* model;
    bool fp8, overlap;
  };
  for (const Case& c : {Case{"gpt3-175b", false, false}, Case{"llama3-70b", true, true}}) {
    const GptConfig model = find_catalog_model(c.model)->model;
    ParallelPlan plan;
    plan.tp = 8;
    plan.pp = 4;
    plan.dp = 2;
    plan.global_batch = 16;
    plan.tp_comm = TpComm::SequenceParallel;
    plan.attention = AttentionKernel::Flash;
    plan.zero_stage = 1;
    if (c.fp8)
      plan.precision = GemmPrecision::Fp8;
    WorkloadOptions options;
    options.tp_comm_overlap = c.overlap;
    const Workload workload = make_workload(model, plan, options);
    ComputeDurationMemo memo(gpu);
    size_t compute_ops = 0;
    std::set<std::tuple<std::string, double, double, int64_t, int64_t, int64_t, int32_t>> distinct;
    for (int64_t stage = 0; stage < plan.pp; ++stage)
      for (traces::Op op : stage_program(workload, stage).ops) {
        if (op.kind != traces::OpKind::Compute && op.kind != traces::OpKind::Memcpy)
          continue;
        ++compute_ops;
        distinct.insert({op.name, op.flops, op.bytes, op.gemm.m, op.gemm.n, op.gemm.k, op.gemm.comm_sms});
        ASSERT_EQ(memo(op), compute_duration_s(gpu, op)) << c.model << " stage " << stage << " " << op.name;
        op.duration_ns = 1234; // measured: taken as it is, whatever the model says
        EXPECT_EQ(memo(op), 1234 * 1e-9);
      }
    EXPECT_EQ(memo.distinct_ops(), distinct.size()) << c.model;
    EXPECT_LT(memo.distinct_ops() * 20, compute_ops) << c.model; // the point: few distinct ops
  }
}

TEST(ComputeDurationMemo, OpsTheModelTellsApartGetTheirOwnEntries)
{
  const GpuComputeModel gpu = h100();
  ComputeDurationMemo memo(gpu);
  traces::Op gemm;
  gemm.name = "attn.flash.fwd"; // timed at least at the measured attention throughput
  gemm.gemm = {8192, 8192, 128, 64};
  gemm.flops = 2.0 * 8192 * 8192 * 128 * 64;
  gemm.bytes = 1e6;
  traces::Op plain = gemm;
  plain.name = "fc1.fwd";
  traces::Op margin = plain;
  margin.gemm.comm_sms = 16; // TP comm overlap holds SMs back
  traces::Op fp8 = plain;
  fp8.gemm.precision = traces::GemmPrecision::Fp8;
  for (const traces::Op* op : {&gemm, &plain, &margin, &fp8, &gemm, &plain, &margin, &fp8})
    EXPECT_EQ(memo(*op), compute_duration_s(gpu, *op)) << op->name;
  EXPECT_EQ(memo.distinct_ops(), 4u);
  EXPECT_NE(memo(plain), memo(margin));
  EXPECT_NE(memo(plain), memo(fp8));
}

} // namespace
} // namespace gputwin
