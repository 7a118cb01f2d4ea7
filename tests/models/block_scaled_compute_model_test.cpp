// MXFP8 and NVFP4 GEMMs in the GPU compute model (Blackwell): MXFP8 timed against the FP8 peak, NVFP4 against the
// FP4 peak, both with the efficiency of the bf16 GEMM of a half (MXFP8) or a quarter (NVFP4) of the depth
// (gpu_compute_model.hpp, "Quantized GEMMs"); their operands in
// the recipe's element size with block scales, the cast of the bf16 operand a serial memory-bound part. Every
// expected time is built here from the peaks, the modelled efficiency and the element sizes.
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/comm_interference.hpp"
#include "gputwin/models/gpu_compute_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <utility>

namespace gputwin {
namespace {

// topologies/clusters/dgx-b200.yaml: the HGX/DGX B200 datasheet's dense peaks and HBM bandwidth.
constexpr double b200_bf16_peak = 2250e12;
constexpr double b200_fp8_peak = 4500e12;
constexpr double b200_fp4_peak = 9000e12;
constexpr double b200_hbm = 7.7e12;

GpuComputeModel b200()
{
  return builtin_compute_model(GpuGeneration::Blackwell, "b200", b200_bf16_peak, b200_hbm, b200_fp8_peak,
                               b200_fp4_peak);
}

// A linear GEMM in `precision` with `cast_elements` of its bf16 operand cast first (read 2, write two copies).
traces::Op gemm_op(int64_t m, int64_t n, int64_t k, traces::GemmPrecision precision, double cast_elements = 0)
{
  traces::Op op;
  op.kind = traces::OpKind::Compute;
  op.name = "fc1.fwd";
  op.gemm = traces::GemmShape{m, n, k, 1, precision};
  op.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const double e = traces::quantized_element_bytes(precision);
  op.bytes = e * static_cast<double>(m * k + k * n) + 2.0 * static_cast<double>(m * n) +
             (precision == traces::GemmPrecision::Bf16 ? 0.0 : (2.0 + 2.0 * e) * cast_elements);
  return op;
}

TEST(BlockScaledComputeModel, ElementSizesCarryTheBlockScales)
{
  EXPECT_DOUBLE_EQ(traces::quantized_element_bytes(traces::GemmPrecision::Bf16), 2.0);
  EXPECT_DOUBLE_EQ(traces::quantized_element_bytes(traces::GemmPrecision::Fp8), 1.0);
  EXPECT_DOUBLE_EQ(traces::quantized_element_bytes(traces::GemmPrecision::Mxfp8), 1.0 + 1.0 / 32); // E8M0 per 32
  EXPECT_DOUBLE_EQ(traces::quantized_element_bytes(traces::GemmPrecision::Nvfp4), 0.5 + 1.0 / 16); // E4M3 per 16
  const traces::GemmShape g{4096, 1024, 2048, 2, traces::GemmPrecision::Nvfp4};
  EXPECT_DOUBLE_EQ(quantized_gemm_operand_bytes(g), ((4096.0 * 2048 + 2048.0 * 1024) * 0.5625 + 2.0 * 4096 * 1024) * 2);
}

TEST(BlockScaledComputeModel, PeaksByPrecision)
{
  const GpuComputeModel gpu = b200();
  const auto peak = [&](traces::GemmPrecision p) { return gemm_peak_flops(gpu, traces::GemmShape{1, 1, 1, 1, p}); };
  EXPECT_DOUBLE_EQ(peak(traces::GemmPrecision::Bf16), b200_bf16_peak);
  EXPECT_DOUBLE_EQ(peak(traces::GemmPrecision::Fp8), b200_fp8_peak);
  EXPECT_DOUBLE_EQ(peak(traces::GemmPrecision::Mxfp8), b200_fp8_peak); // block-scaled FP8 at the FP8 rate
  EXPECT_DOUBLE_EQ(peak(traces::GemmPrecision::Nvfp4), b200_fp4_peak);
}

TEST(BlockScaledComputeModel, GemmsRunAtTheirPeakWithTheEfficiencyOfTheBf16EquivalentDepth)
{
  const GpuComputeModel gpu = b200();
  const double stream_bytes_per_s = memory_class_bytes_per_s(gpu, KernelClass::Elementwise);
  for (const auto& [precision, peak] : {std::pair{traces::GemmPrecision::Mxfp8, b200_fp8_peak},
                                        std::pair{traces::GemmPrecision::Nvfp4, b200_fp4_peak}})
    for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{8192, 14336, 4096},
                                  {8192, 4096, 4096},
                                  {16384, 16384, 64},
                                  {128, 128, 128}}) {
      SCOPED_TRACE(traces::to_string(precision) + " " + std::to_string(m) + " x " + std::to_string(n) + " x " +
                   std::to_string(k));
      const traces::Op op = gemm_op(m, n, k, precision);
      const double expected_s =
          std::max(op.flops / (peak * modelled_gemm_efficiency(gpu, op.gemm)), op.bytes / stream_bytes_per_s) +
          gpu.kernel_overhead_s;
      EXPECT_DOUBLE_EQ(compute_duration_s(gpu, op), expected_s);
    }
  // A large compute-bound GEMM: the time of the bf16 GEMM of a quarter (NVFP4) or half (MXFP8) of the depth, whose
  // FLOPs are a quarter (half) of its own at a quarter (half) of its peak, over the block-scaled factor fitted on
  // NVIDIA's B300 GEMMs (0.685 and 0.916).
  const double bf16_quarter_s = compute_duration_s(gpu, gemm_op(8192, 14336, 1024, traces::GemmPrecision::Bf16));
  const double bf16_half_s = compute_duration_s(gpu, gemm_op(8192, 14336, 2048, traces::GemmPrecision::Bf16));
  EXPECT_NEAR(compute_duration_s(gpu, gemm_op(8192, 14336, 4096, traces::GemmPrecision::Nvfp4)),
              bf16_quarter_s * 4 * b200_bf16_peak / b200_fp4_peak / 0.685, 1e-9 * bf16_quarter_s);
  EXPECT_DOUBLE_EQ(block_scaled_gemm_factor(traces::GemmPrecision::Nvfp4), 0.685);
  EXPECT_DOUBLE_EQ(block_scaled_gemm_factor(traces::GemmPrecision::Mxfp8), 0.916);
  EXPECT_DOUBLE_EQ(block_scaled_gemm_factor(traces::GemmPrecision::Fp8), 1.0);
  EXPECT_NEAR(compute_duration_s(gpu, gemm_op(8192, 14336, 4096, traces::GemmPrecision::Mxfp8)),
              bf16_half_s * 2 * b200_bf16_peak / b200_fp8_peak / 0.916, 1e-9 * bf16_half_s);
}

// The quantize kernel before the GEMM: its bytes (read 2, write the row-wise and column-wise copies with scales)
// stream at the elementwise bandwidth, after the GEMM's own time, plus one kernel's overhead.
TEST(BlockScaledComputeModel, CastIsASerialMemoryBoundPart)
{
  const GpuComputeModel gpu = b200();
  const double stream_bytes_per_s = memory_class_bytes_per_s(gpu, KernelClass::Elementwise);
  for (const traces::GemmPrecision precision : {traces::GemmPrecision::Mxfp8, traces::GemmPrecision::Nvfp4}) {
    SCOPED_TRACE(traces::to_string(precision));
    const double cast_elements = 8192.0 * 4096;
    const double e = traces::quantized_element_bytes(precision);
    const double with_cast = compute_duration_s(gpu, gemm_op(8192, 14336, 4096, precision, cast_elements));
    const double without = compute_duration_s(gpu, gemm_op(8192, 14336, 4096, precision));
    EXPECT_NEAR(with_cast - without, (2.0 + 2.0 * e) * cast_elements / stream_bytes_per_s + gpu.kernel_overhead_s,
                1e-12);
  }
}

TEST(BlockScaledComputeModel, Nvfp4WithoutFp4PeakIsAClearError)
{
  const GpuComputeModel h100 = builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", 989e12, 3.35e12, 1979e12);
  EXPECT_EQ(h100.peak_fp4_flops, 0);
  try {
    compute_duration_s(h100, gemm_op(4096, 4096, 4096, traces::GemmPrecision::Nvfp4));
    FAIL() << "an NVFP4 GEMM without an FP4 peak must throw";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("op 'fc1.fwd': an NVFP4 GEMM, but the GPU model 'h100-sxm5-80gb' has no FP4 peak"),
              std::string::npos)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
}

TEST(BlockScaledComputeModel, InterferencePathUsesTheFp4Peak)
{
  const GpuComputeModel gpu = b200();
  CommLoad load;
  load.channels = 24;
  // The NVFP4 GEMM and the bf16 GEMM of a quarter of its depth: the same tiles, slowed by the same factor (the
  // NVFP4 one over its block-scaled factor).
  const double bf16_s = interfered_duration_s(gpu, gemm_op(8192, 14336, 1024, traces::GemmPrecision::Bf16), load);
  const double fp4_s = interfered_duration_s(gpu, gemm_op(8192, 14336, 4096, traces::GemmPrecision::Nvfp4), load);
  EXPECT_GT(bf16_s, compute_duration_s(gpu, gemm_op(8192, 14336, 1024, traces::GemmPrecision::Bf16)));
  EXPECT_NEAR(fp4_s / bf16_s, 4 * b200_bf16_peak / b200_fp4_peak / 0.685, 1e-3);
}

} // namespace
} // namespace gputwin
