// The built-in Blackwell compute model for Blackwell Ultra GPUs (gpu.kind b300 / gb300): the B200 model with 160 SMs
// (NVIDIA's technical blog "Inside NVIDIA Blackwell Ultra", developer.nvidia.com 2025-08) and its own GEMM level
// (NVIDIA's B300 GEMM measurement): a GEMM that spills a 149th tile runs in one wave on 160 SMs where B200 needs
// two.
#include "gputwin/models/gpu_compute_model.hpp"

#include <gtest/gtest.h>

namespace gputwin {
namespace {

GpuComputeModel blackwell(const std::string& kind, double bf16_peak, double fp8_peak)
{
  return builtin_compute_model(GpuGeneration::Blackwell, kind, bf16_peak, 8e12, fp8_peak);
}

TEST(BlackwellUltraComputeModel, B300AndGb300Have160SmsAndTheirOwnLevel)
{
  const GpuComputeModel b200 = blackwell("b200-sxm-180gb", 2250e12, 4500e12);
  const GpuComputeModel gb200 = blackwell("gb200", 2450e12, 4900e12);
  const GpuComputeModel b300 = blackwell("b300", 2250e12, 4500e12);
  const GpuComputeModel gb300 = blackwell("gb300", 2500e12, 5000e12);
  EXPECT_EQ(b200.multiprocessors, 148);
  EXPECT_EQ(gb200.multiprocessors, 148);
  EXPECT_EQ(b300.multiprocessors, 160);
  EXPECT_EQ(gb300.multiprocessors, 160);
  EXPECT_EQ(blackwell("b300-sxm-288gb", 2250e12, 4500e12).multiprocessors, 160);
  // Blackwell Ultra has its own level (NVIDIA's B300 GEMM measurement), GB200 its own (NVIDIA's GB200 NVL72 runs),
  // B200 the one fitted on SimuMax's DGX B200 node.
  EXPECT_DOUBLE_EQ(gb300.gemm_efficiency, b300.gemm_efficiency);
  EXPECT_GT(gb200.gemm_efficiency, b200.gemm_efficiency);
  EXPECT_GT(b300.gemm_efficiency, gb200.gemm_efficiency);
  EXPECT_DOUBLE_EQ(gb300.peak_flops, 2500e12);
  EXPECT_DOUBLE_EQ(gb300.peak_fp8_flops, 5000e12);
  EXPECT_NE(gb300.source.find("160 SMs"), std::string::npos) << gb300.source;
  EXPECT_NE(b300.source.find("B300 GEMM measurement"), std::string::npos) << b300.source;
}

TEST(BlackwellUltraComputeModel, WaveQuantizationOn160Sms)
{
  const GpuComputeModel b200 = blackwell("b200-sxm-180gb", 2250e12, 4500e12);
  const GpuComputeModel b300 = blackwell("b300", 2250e12, 4500e12);
  // 160 output tiles: one full wave on 160 SMs, 148 + 12 on B200.
  const traces::GemmShape shape{160 * 128, 128, 8192, 1, traces::GemmPrecision::Bf16}; // 128 x 128 tiles
  EXPECT_DOUBLE_EQ(gemm_wave_utilization(b300, shape, b300.multiprocessors), 1.0);
  EXPECT_NEAR(gemm_wave_utilization(b200, shape, b200.multiprocessors), 160.0 / 296.0, 1e-12);
}

} // namespace
} // namespace gputwin
