// The FP8 peak in GPU compute model files (peak_fp8_flops_per_s, optional) and in cluster files
// (gpu.peak_fp8_tflops, optional): written only when the GPU has one, read back exactly, absent = none, bad
// values one-line errors naming the field.
#include "gputwin/config/gpu_model_yaml.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/topologies/cluster_spec.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace gputwin::config {
namespace {

std::string write_temp(const std::string& name, const std::string& text)
{
  const std::string path = test_temp_path(name);
  std::ofstream(path) << text;
  return path;
}

TEST(Fp8GpuModelYaml, Fp8PeakRoundTripsAndIsWrittenOnlyWhenSet)
{
  Calibration h100;
  h100.gpu = builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", 989e12, 3350e9, 1979e12);
  std::ostringstream text;
  write_calibration_yaml(text, h100, {});
  EXPECT_NE(text.str().find("\npeak_fp8_flops_per_s: 1.979e+15"), std::string::npos) << text.str();
  const GpuComputeModel loaded = load_gpu_model_yaml(write_temp("h100-fp8.yaml", text.str()));
  EXPECT_DOUBLE_EQ(loaded.peak_fp8_flops, 1979e12);
  EXPECT_DOUBLE_EQ(loaded.peak_flops, 989e12);

  Calibration a100;
  a100.gpu = builtin_compute_model(GpuGeneration::Ampere, "a100-sxm4-80gb", 312e12, 2039e9);
  std::ostringstream a100_text;
  write_calibration_yaml(a100_text, a100, {});
  EXPECT_EQ(a100_text.str().find("peak_fp8"), std::string::npos) << "no FP8 tensor cores: no line";
  EXPECT_EQ(load_gpu_model_yaml(write_temp("a100.yaml", a100_text.str())).peak_fp8_flops, 0);
}

TEST(Fp8GpuModelYaml, NonPositiveFp8PeakIsAnError)
{
  const std::string base = "gpu_kind: h100\npeak_flops_per_s: 989e12\nhbm_bytes_per_s: 3.35e12\nmultiprocessors: 132\n"
                           "gemm_tile_m: 128\ngemm_tile_n: 128\ngemm_efficiency: 0.7\ngemm_k_half: 0\n"
                           "memory_efficiency: 0.5\nkernel_overhead_s: 0\n";
  for (const std::string value : {"0", "-1", "fast"}) {
    SCOPED_TRACE(value);
    try {
      load_gpu_model_yaml(write_temp("bad-fp8.yaml", base + "peak_fp8_flops_per_s: " + value + "\n"));
      FAIL() << "expected an error";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("peak_fp8_flops_per_s"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}

TEST(Fp8ClusterSpec, HopperClustersHaveTheDatasheetPeakA100sNone)
{
  EXPECT_DOUBLE_EQ(topo::load_cluster("dgx-h100", 0, {}).gpu.peak_fp8_flops, 1979e12);
  EXPECT_DOUBLE_EQ(topo::load_cluster("dgx-h200", 0, {}).gpu.peak_fp8_flops, 1979e12);
  EXPECT_EQ(topo::load_cluster("dgx-a100", 0, {}).gpu.peak_fp8_flops, 0);
  EXPECT_EQ(topo::load_cluster("nd-a100-v4", 0, {}).gpu.peak_fp8_flops, 0);
  EXPECT_DOUBLE_EQ(topo::load_cluster("dgx-h100", 0, {"gpu.peak_fp8_tflops=1000"}).gpu.peak_fp8_flops, 1000e12);
}

TEST(Fp8ClusterSpec, BadFp8PeakIsOneLineNamingTheField)
{
  for (const std::string value : {"0", "-5", "fast"}) {
    SCOPED_TRACE(value);
    try {
      topo::load_cluster("dgx-h100", 0, {"gpu.peak_fp8_tflops=" + value});
      FAIL() << "expected an error";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("--set gpu.peak_fp8_tflops: expected a positive number"), std::string::npos)
          << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  }
}

// The FP4 peak likewise: peak_fp4_flops_per_s written only when the model has one and read back; the Blackwell
// clusters carry gpu.peak_fp4_tflops (their files cite the datasheets), the Hopper and Ampere ones none.
TEST(Fp4GpuModelYaml, Fp4PeakRoundTripsAndBlackwellClustersHaveIt)
{
  Calibration b200;
  b200.gpu = builtin_compute_model(GpuGeneration::Blackwell, "b200", 2250e12, 7700e9, 4500e12, 9000e12);
  std::ostringstream text;
  write_calibration_yaml(text, b200, {});
  EXPECT_NE(text.str().find("\npeak_fp4_flops_per_s: 9e+15"), std::string::npos) << text.str();
  EXPECT_DOUBLE_EQ(load_gpu_model_yaml(write_temp("b200-fp4.yaml", text.str())).peak_fp4_flops, 9000e12);
  Calibration h100;
  h100.gpu = builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", 989e12, 3350e9, 1979e12);
  std::ostringstream h100_text;
  write_calibration_yaml(h100_text, h100, {});
  EXPECT_EQ(h100_text.str().find("peak_fp4"), std::string::npos) << "no FP4 tensor cores: no line";

  EXPECT_DOUBLE_EQ(topo::load_cluster("dgx-b200", 0, {}).gpu.peak_fp4_flops, 9000e12);
  EXPECT_DOUBLE_EQ(topo::load_cluster("gb200-nvl72", 0, {}).gpu.peak_fp4_flops, 9800e12);
  EXPECT_DOUBLE_EQ(topo::load_cluster("dgx-b300", 0, {}).gpu.peak_fp4_flops, 13500e12);
  EXPECT_DOUBLE_EQ(topo::load_cluster("gb300-nvl72", 0, {}).gpu.peak_fp4_flops, 15000e12);
  EXPECT_EQ(topo::load_cluster("dgx-h100", 0, {}).gpu.peak_fp4_flops, 0);
  EXPECT_DOUBLE_EQ(topo::load_cluster("dgx-b200", 0, {"gpu.peak_fp4_tflops=8000"}).gpu.peak_fp4_flops, 8000e12);
  try {
    topo::load_cluster("dgx-b200", 0, {"gpu.peak_fp4_tflops=0"});
    FAIL() << "a zero FP4 peak must be refused";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--set gpu.peak_fp4_tflops: expected a positive number"), std::string::npos)
        << e.what();
  }
}

} // namespace
} // namespace gputwin::config
