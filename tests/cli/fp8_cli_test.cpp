// --fp8 through the real binary: FP8 linear GEMMs make an H100 iteration faster; on an A100 cluster every
// command that takes plan flags and a cluster refuses it with one line naming --fp8 (exit status 2).
#include "json_report.hpp"
#include "run_cli.hpp"

#include "gputwin/traces/json_value.hpp"
#include "gputwin/traces/trace_io.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace gputwin::testing {
namespace {

const std::string llama_h100 = "simulate --model llama3-8b --cluster dgx-h100 --tp 8 --sp --attention flash --json";

double iteration_time_s(const std::string& arguments)
{
  const CliResult r = run_gputwin(arguments, false);
  EXPECT_EQ(r.exit_code, 0) << arguments << "\n" << r.output;
  if (r.exit_code != 0)
    return -1;
  return number(traces::parse_json(r.output), "iteration_time_s");
}

TEST(Fp8Cli, Llama3On8H100sIsFasterWithFp8)
{
  const double bf16_s = iteration_time_s(llama_h100);
  const double fp8_s = iteration_time_s(llama_h100 + " --fp8");
  ASSERT_GT(bf16_s, 0);
  ASSERT_GT(fp8_s, 0);
  EXPECT_LT(fp8_s, bf16_s);
  // Only the linear GEMMs get the 2x peak; attention, memory-bound kernels, casts and communication do not, so
  // the iteration gains less than 2x.
  EXPECT_GT(fp8_s, 0.5 * bf16_s);
  std::printf("llama3-8b tp 8 sp flash on dgx-h100: bf16 %.6g s, fp8 %.6g s (x%.4f)\n", bf16_s, fp8_s, fp8_s / bf16_s);
}

TEST(Fp8Cli, H200AlsoTakesFp8)
{
  EXPECT_GT(
      iteration_time_s("simulate --model llama3-8b --cluster dgx-h200 --tp 8 --sp --attention flash --fp8 --json"), 0);
}

TEST(Fp8Cli, A100ClusterRefusesFp8WithOneLineAndExitStatus2)
{
  const std::string expected =
      "--fp8: the a100-sxm4-80gb of dgx-a100 has no FP8 tensor cores (expected an H100, H200 or B200 cluster";
  for (const std::string command :
       {"simulate --model llama3-8b --cluster dgx-a100 --tp 8 --sp --attention flash --fp8 --json",
        "simulate --model llama3-8b --cluster dgx-a100 --tp 8 --sp --attention flash --fp8 --estimate",
        "memory --model llama3-8b --cluster dgx-a100 --tp 8 --sp --fp8"}) {
    expect_one_line_error(command, expected);
    EXPECT_EQ(run_gputwin(command, true).exit_code, 2) << command;
  }
  expect_one_line_error("simulate --model llama3-8b --cluster nd-a100-v4 --tp 8 --sp --fp8",
                        "--fp8: the a100-sxm4-40gb of nd-a100-v4 has no FP8 tensor cores");
  // Without --fp8 the same plan runs on the A100s.
  EXPECT_GT(iteration_time_s("simulate --model llama3-8b --cluster dgx-a100 --tp 8 --sp --attention flash --json"), 0);
}

// A one-GEMM trace without measured durations: replay --gpu times it through the compute model.
std::string one_gemm_trace(bool fp8, int64_t k = 4096)
{
  traces::OpGraph g;
  traces::Op op;
  op.kind = traces::OpKind::Compute;
  op.name = "fc1.fwd";
  op.gemm = traces::GemmShape{8192, 14336, k, 1, fp8 ? traces::GemmPrecision::Fp8 : traces::GemmPrecision::Bf16};
  op.flops = 2.0 * 8192 * 14336 * static_cast<double>(k);
  op.bytes = 1e8;
  g.ranks.push_back(traces::RankProgram{0, {op}});
  const std::string path = test_temp_path((fp8 ? "fp8-gemm-k" : "bf16-gemm-k") + std::to_string(k) + ".json");
  std::ofstream(path) << traces::op_graph_to_json(g);
  return path;
}

double replayed_s(const std::string& arguments)
{
  const CliResult r = run_gputwin(arguments + " --json", false);
  EXPECT_EQ(r.exit_code, 0) << arguments << "\n" << r.output;
  return r.exit_code == 0 ? number(traces::parse_json(r.output), "iteration_time_s") : -1;
}

TEST(Fp8Cli, ReplayedFp8GemmRunsAtTheFp8PeakAndIsRefusedOnAnA100)
{
  // A compute-bound FP8 GEMM of depth 4096 takes the time of the bf16 GEMM of depth 2048 (gpu_compute_model.hpp,
  // "Quantized GEMMs"): the main loop over half the depth at the same tiles.
  const std::string fp8 = one_gemm_trace(true), bf16_half_depth = one_gemm_trace(false, 2048);
  const double fp8_s = replayed_s("replay '" + fp8 + "' --cluster dgx-h100 --gpu h100");
  const double bf16_s = replayed_s("replay '" + bf16_half_depth + "' --cluster dgx-h100 --gpu h100");
  ASSERT_GT(bf16_s, 0);
  EXPECT_NEAR(fp8_s / bf16_s, 1.0, 0.01) << "a compute-bound FP8 GEMM at twice the peak, half the depth";
  expect_one_line_error("replay '" + fp8 + "' --cluster dgx-h100 --gpu a100",
                        "op 'fc1.fwd': an FP8 GEMM, but the GPU model 'a100-sxm4-80gb' has no FP8 peak");
  EXPECT_EQ(run_gputwin("replay '" + fp8 + "' --cluster dgx-h100 --gpu a100", true).exit_code, 2);
}

} // namespace
} // namespace gputwin::testing
