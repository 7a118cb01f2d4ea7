// FP8 GEMMs in the GPU compute model (gpu_compute_model.hpp): timed against peak_fp8_flops with the bf16
// efficiency rules, so a large compute-bound FP8 GEMM takes the bf16 time x bf16 peak / FP8 peak; refused on a
// model without an FP8 peak; the interference path uses the same peak.
#include "gputwin/models/comm_interference.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/common/input_error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>

namespace gputwin {
namespace {

constexpr double h100_bf16_peak = 989e12; // H100 SXM5 datasheet, dense
constexpr double h100_fp8_peak = 1979e12; // H100 SXM5 datasheet, dense
constexpr double h100_hbm = 3.35e12;

traces::Op gemm_op(int64_t m, int64_t n, int64_t k, bool fp8)
{
  traces::Op op;
  op.kind = traces::OpKind::Compute;
  op.name = "fc1.fwd";
  op.gemm = traces::GemmShape{m, n, k, 1, fp8 ? traces::GemmPrecision::Fp8 : traces::GemmPrecision::Bf16};
  op.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const double operand_bytes = fp8 ? 1 : 2; // output in bf16 either way
  op.bytes = operand_bytes * static_cast<double>(m * k + k * n) + 2.0 * static_cast<double>(m * n);
  return op;
}

TEST(Fp8ComputeModel, LargeGemmTakesBf16TimeTimesPeakRatio)
{
  const GpuComputeModel h100 = builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", h100_bf16_peak, h100_hbm, h100_fp8_peak);
  EXPECT_DOUBLE_EQ(h100.peak_fp8_flops, h100_fp8_peak);
  // A llama3-8b-sized fc1 at tp 1 (8192 tokens x 14336 x 4096): compute bound in both precisions.
  const double bf16_s = compute_duration_s(h100, gemm_op(8192, 14336, 4096, false));
  const double fp8_s = compute_duration_s(h100, gemm_op(8192, 14336, 4096, true));
  EXPECT_NEAR(fp8_s / bf16_s, h100_bf16_peak / h100_fp8_peak, 1e-3 * h100_bf16_peak / h100_fp8_peak)
      << "bf16 " << bf16_s << " s, fp8 " << fp8_s << " s";
  // The same efficiency: the FP8 GEMM reaches the same fraction of its peak as the bf16 one of its own.
  EXPECT_NEAR(gemm_op(8192, 14336, 4096, true).flops / fp8_s / h100_fp8_peak,
              gemm_op(8192, 14336, 4096, false).flops / bf16_s / h100_bf16_peak, 1e-6);
  EXPECT_DOUBLE_EQ(gemm_peak_flops(h100, traces::GemmShape{1, 1, 1, 1, traces::GemmPrecision::Fp8}), h100_fp8_peak);
  EXPECT_DOUBLE_EQ(gemm_peak_flops(h100, traces::GemmShape{1, 1, 1, 1, traces::GemmPrecision::Bf16}), h100_bf16_peak);
}

TEST(Fp8ComputeModel, EveryShapeIsTheRooflineAtTheFp8Peak)
{
  // The same efficiency rule (table and curve) as bf16, against the FP8 peak; the operand bytes are the op's (1 per
  // element), so short-k shapes stay bound by their bytes and gain less than the peak ratio.
  const GpuComputeModel h100 = builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", h100_bf16_peak, h100_hbm, h100_fp8_peak);
  const double stream_bytes_per_s = memory_class_bytes_per_s(h100, KernelClass::Elementwise);
  for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{8192, 4096, 4096},
                                {8192, 1536, 4096},
                                {2048, 4096, 14336},
                                {16384, 16384, 64},
                                {128, 128, 128}}) {
    SCOPED_TRACE(std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k));
    const traces::Op fp8 = gemm_op(m, n, k, true);
    const double expected_s = std::max(fp8.flops / (h100_fp8_peak * modelled_gemm_efficiency(h100, fp8.gemm)),
                                       fp8.bytes / stream_bytes_per_s) +
                              h100.kernel_overhead_s;
    EXPECT_DOUBLE_EQ(compute_duration_s(h100, fp8), expected_s);
    EXPECT_LT(expected_s, compute_duration_s(h100, gemm_op(m, n, k, false)));
  }
}

TEST(Fp8ComputeModel, Fp8GemmWithoutFp8PeakIsAClearError)
{
  const GpuComputeModel a100 = builtin_compute_model(GpuGeneration::Ampere, "a100-sxm4-80gb", 312e12, 2039e9);
  EXPECT_EQ(a100.peak_fp8_flops, 0);
  EXPECT_GT(compute_duration_s(a100, gemm_op(4096, 4096, 4096, false)), 0); // bf16 unaffected
  try {
    compute_duration_s(a100, gemm_op(4096, 4096, 4096, true));
    FAIL() << "an FP8 GEMM on an A100 must throw";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("op 'fc1.fwd': an FP8 GEMM, but the GPU model 'a100-sxm4-80gb' has no FP8 peak"),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
  EXPECT_THROW(gemm_peak_flops(a100, traces::GemmShape{1, 1, 1, 1, traces::GemmPrecision::Fp8}), InputError);
}

TEST(Fp8ComputeModel, InterferencePathUsesTheFp8Peak)
{
  // Under an NCCL load that takes SMs, the FP8 GEMM is slowed by the same factor as the bf16 one (same shape,
  // same wave quantization), so the peak ratio carries over.
  const GpuComputeModel h100 = builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", h100_bf16_peak, h100_hbm, h100_fp8_peak);
  CommLoad load;
  load.channels = 24;
  const double bf16_s = interfered_duration_s(h100, gemm_op(8192, 14336, 4096, false), load);
  const double fp8_s = interfered_duration_s(h100, gemm_op(8192, 14336, 4096, true), load);
  EXPECT_GT(bf16_s, compute_duration_s(h100, gemm_op(8192, 14336, 4096, false)));
  EXPECT_NEAR(fp8_s / bf16_s, h100_bf16_peak / h100_fp8_peak, 1e-3 * h100_bf16_peak / h100_fp8_peak);
}

} // namespace
} // namespace gputwin
