// --precision bf16|fp8|mxfp8|nvfp4 through the real binary: --fp8 is --precision fp8 byte for byte; the
// block-scaled formats run on a Blackwell cluster at their peak (the report names the precision and the peak MFU
// divides by), and are refused on a Hopper GPU with one line naming the flag and the GPU (exit status 2).
#include "json_report.hpp"
#include "run_cli.hpp"

#include "gputwin/traces/json_value.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <fstream>
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
  }
  // Where the GEMMs are large enough to pay for NVFP4's quantize passes (amax, Hadamard column-wise copy), its
  // GEMMs at twice the FP8 peak (0.685 of the quarter-depth rule) make the iteration faster than FP8's; MXFP8,
  // FP8's rate with block scales (0.916 of the rule) and the same casts, slower.
  const std::string large = "simulate --model llama3-405b --layers 4 --cluster dgx-b200 --tp 8 --sp --attention flash "
                            "--allow-oom --json";
  const auto time_s = [&](const std::string& precision) {
    const CliResult r = run_gputwin(large + " " + precision, false);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return number(traces::parse_json(r.output), "iteration_time_s");
  };
  const double fp8_s = time_s("--fp8");
  EXPECT_LT(time_s("--precision nvfp4"), fp8_s);
  EXPECT_GT(time_s("--precision mxfp8"), fp8_s);
}

TEST(PrecisionCli, HopperRefusesBlockScaledFormatsWithOneLineAndExitStatus2)
{
  for (const std::string& precision : {std::string("nvfp4"), std::string("mxfp8")})
    for (const std::string& command :
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

// --fp8-recipe tensorwise (FP8 current scaling, Megatron-Core's --fp8-recipe tensorwise): the report names the
// recipe, the iteration pays an amax pass before every cast (slower than delayed scaling on a one-stage plan, whose
// per-micro-batch amax reductions are tiny), a launch line's --fp8-recipe tensorwise reads the same, a sweep's CSV
// says "tensorwise" in its fp8 column and --merge reads it back; a recipe without per-tensor FP8, or one not
// modelled, is one line and exit status 2.
TEST(PrecisionCli, TensorwiseFp8RecipeIsNamedTimedAndMerged)
{
  const std::string llama_h100 = "simulate --model llama3-8b --cluster dgx-h100 --tp 8 --sp --attention flash --json";
  const CliResult delayed = run_gputwin(llama_h100 + " --fp8", false);
  const CliResult current = run_gputwin(llama_h100 + " --fp8 --fp8-recipe tensorwise", false);
  ASSERT_EQ(delayed.exit_code, 0) << delayed.output;
  ASSERT_EQ(current.exit_code, 0) << current.output;
  const traces::JsonValue d = traces::parse_json(delayed.output), c = traces::parse_json(current.output);
  EXPECT_EQ(member(member(d, "plan"), "fp8_recipe").text, "delayed");
  EXPECT_EQ(member(member(c, "plan"), "fp8_recipe").text, "tensorwise");
  EXPECT_TRUE(member(member(c, "plan"), "fp8").boolean);
  EXPECT_GT(number(c, "iteration_time_s"), number(d, "iteration_time_s"));

  const std::string launch = test_temp_path("tensorwise-launch.sh");
  {
    std::ofstream out(launch);
    out << "torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 --ffn-hidden-size 14336 "
           "--num-attention-heads 32 --group-query-attention --num-query-groups 8 --swiglu --normalization RMSNorm "
           "--position-embedding-type rope --untie-embeddings-and-output-weights --disable-bias-linear "
           "--seq-length 8192 --vocab-size 128256 --tensor-model-parallel-size 8 --sequence-parallel "
           "--micro-batch-size 1 --global-batch-size 1 --bf16 --fp8-format hybrid --fp8-recipe tensorwise\n";
  }
  const CliResult from_launch =
      run_gputwin("simulate --cluster dgx-h100 --attention flash --json --megatron-args " + launch, false);
  ASSERT_EQ(from_launch.exit_code, 0) << from_launch.output;
  EXPECT_EQ(member(member(traces::parse_json(from_launch.output), "plan"), "fp8_recipe").text, "tensorwise");

  const std::string csv = test_temp_path("tensorwise-sweep.csv"), merged = test_temp_path("tensorwise-merged.csv");
  const CliResult sweep = run_gputwin("sweep --model llama3-8b --cluster dgx-h100 --gpus 8 --global-batch 8 "
                                      "--attention flash --fp8 --fp8-recipe tensorwise --csv " + csv,
                                      false);
  ASSERT_EQ(sweep.exit_code, 0) << sweep.output;
  const std::string written = read_file(csv);
  EXPECT_NE(written.find(",tensorwise,"), std::string::npos) << written;
  const CliResult merge = run_gputwin("sweep --merge " + csv + " -o " + merged, false);
  ASSERT_EQ(merge.exit_code, 0) << merge.output;
  EXPECT_EQ(read_file(merged), written);

  expect_one_line_error("simulate --model llama3-8b --cluster dgx-h100 --tp 8 --fp8-recipe tensorwise",
                        "--fp8-recipe: scales per-tensor FP8 GEMMs (expected --fp8 or --precision fp8, got bf16)");
  expect_one_line_error("simulate --model llama3-8b --cluster dgx-b200 --tp 8 --precision mxfp8 --fp8-recipe delayed",
                        "--fp8-recipe: scales per-tensor FP8 GEMMs (expected --fp8 or --precision fp8, got mxfp8)");
  expect_one_line_error("search --model llama3-8b --cluster dgx-h100 --gpus 8 --attention flash --fp8 "
                        "--fp8-recipe blockwise",
                        "--fp8-recipe: expected delayed or tensorwise (MXFP8: --precision mxfp8; blockwise FP8 is not "
                        "modelled), got 'blockwise'");
}

} // namespace
} // namespace gputwin::testing
