// --precision bf16|fp8|mxfp8|nvfp4 through the real binary: --fp8 is --precision fp8 byte for byte; the
// block-scaled formats run on a Blackwell cluster at their peak (the report names the precision and the peak MFU
// divides by), and are refused on a Hopper GPU with one line naming the flag and the GPU (exit status 2).
#include "json_report.hpp"
#include "run_cli.hpp"

#include "gputwin/traces/json_value.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gputwin::testing {
namespace {

const std::string llama_b200 = "simulate --model llama3-8b --cluster dgx-b200 --tp 8 --sp --attention flash --json";

// The report of `arguments` with its one wall-clock field dropped (everything else is deterministic).
std::string deterministic_report(const std::string& arguments)
{
  const CliResult r = run_gputwin(arguments, false);
  EXPECT_EQ(r.exit_code, 0) << arguments << "\n" << r.output;
  std::string out = r.output;
  const size_t at = out.find("\"sim_wall_time_s\"");
  if (at != std::string::npos)
    out.erase(at, out.find_first_of(",}", at) - at);
  return out;
}

TEST(PrecisionCli, Fp8IsASynonymOfPrecisionFp8)
{
  EXPECT_EQ(deterministic_report(llama_b200 + " --fp8"), deterministic_report(llama_b200 + " --precision fp8"));
}

TEST(PrecisionCli, BlockScaledFormatsRunAtTheirPeakOnB200)
{
  struct Case {
    const char* precision;
    double peak_flops; // topologies/clusters/dgx-b200.yaml: MXFP8 at the FP8 peak, NVFP4 at the FP4 peak
  };
  double fp8_s = 0;
  {
    const CliResult r = run_gputwin(llama_b200 + " --fp8", false);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    fp8_s = number(traces::parse_json(r.output), "iteration_time_s");
  }
  for (const Case c : {Case{"mxfp8", 4500e12}, Case{"nvfp4", 9000e12}}) {
    SCOPED_TRACE(c.precision);
    const CliResult r = run_gputwin(llama_b200 + " --precision " + c.precision, false);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const traces::JsonValue report = traces::parse_json(r.output);
    EXPECT_EQ(member(report, "mfu_precision").text, c.precision);
    EXPECT_DOUBLE_EQ(number(report, "mfu_peak_flops_per_gpu"), c.peak_flops);
    EXPECT_EQ(member(member(report, "plan"), "precision").text, c.precision);
    const double mfu = number(report, "mfu"), mfu_bf16 = number(report, "mfu_bf16");
    EXPECT_NEAR(mfu / mfu_bf16, 2250e12 / c.peak_flops, 1e-9);
    if (std::string(c.precision) == "nvfp4")
      EXPECT_LT(number(report, "iteration_time_s"), fp8_s) << "the linear GEMMs at twice the FP8 peak";
  }
}

TEST(PrecisionCli, HopperRefusesBlockScaledFormatsWithOneLineAndExitStatus2)
{
  for (const std::string precision : {"nvfp4", "mxfp8"})
    for (const std::string command :
         {"simulate --model llama3-8b --cluster dgx-h100 --tp 8 --sp --attention flash --precision " + precision,
          "memory --model llama3-8b --cluster dgx-h100 --tp 8 --sp --attention flash --precision " + precision,
          "search --model llama3-8b --cluster dgx-h100 --gpus 8 --attention flash --precision " + precision,
          "sweep --model llama3-8b --cluster dgx-h100 --gpus 8 --attention flash --precision " + precision}) {
      expect_one_line_error(command, "--precision " + precision + ": the h100-sxm5-80gb of dgx-h100 (generation "
                                                                  "hopper) has no block-scaled " +
                                         precision + " tensor cores");
      EXPECT_EQ(run_gputwin(command, true).exit_code, 2) << command;
    }
  expect_one_line_error("simulate --model llama3-8b --cluster dgx-a100 --tp 8 --precision nvfp4",
                        "--precision nvfp4: the a100-sxm4-80gb of dgx-a100 (generation ampere)");
  expect_one_line_error("simulate --model llama3-8b --cluster dgx-b200 --tp 8 --precision fp6",
                        "--precision: expected bf16|fp8|mxfp8|nvfp4, got 'fp6'");
}

// A sweep's CSV says the block-scaled format in its fp8 column (0 bf16, 1 FP8, else the format's name), and
// --merge reads it back to the same file.
TEST(PrecisionCli, SweepCsvCarriesTheFormatThroughMerge)
{
  const std::string csv = test_temp_path("nvfp4-sweep.csv"), merged = test_temp_path("nvfp4-merged.csv");
  const CliResult sweep = run_gputwin("sweep --model llama3-8b --cluster dgx-b200 --gpus 8 --global-batch 8 "
                                      "--attention flash --precision nvfp4 --csv " + csv,
                                      false);
  ASSERT_EQ(sweep.exit_code, 0) << sweep.output;
  const std::string written = read_file(csv);
  EXPECT_NE(written.find(",nvfp4,"), std::string::npos) << written;
  const CliResult merge = run_gputwin("sweep --merge " + csv + " -o " + merged, false);
  ASSERT_EQ(merge.exit_code, 0) << merge.output;
  EXPECT_EQ(read_file(merged), written);
}

} // namespace
} // namespace gputwin::testing
