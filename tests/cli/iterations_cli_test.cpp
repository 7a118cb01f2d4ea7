// `gputwin simulate --estimate`, `calibrate --iterations` and `compare --iterations` through the real binary.
#include "run_cli.hpp"
#include "test_temp_path.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>

namespace gputwin::testing {
namespace {

const std::string vtrain = std::string(GPUTWIN_TEST_DATA_DIR) + "/vtrain/ground_truth_single.csv";
const std::string vtrain_flags = " --cluster dgx-a100 --recompute full --schedule 1f1b --vocab 50257";

double json_number(const std::string& json, const std::string& key)
{
  const size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos)
    return std::nan("");
  return std::strtod(json.c_str() + at + key.size() + 3, nullptr); // strtod skips the space after the colon
}

std::string write_file(const std::string& name, const std::string& text)
{
  const std::string path = test_temp_path(name);
  std::ofstream(path) << text;
  return path;
}

// On one node communication ops rarely share a link (a pipeline message and a DP reduction may meet on a
// GPU's NVLink port), so the contention-free executor must give the flow-level simulation's time to 1e-4,
// with and without the host model (exactly, 1e-9, for the TP-only plan).
TEST(SimulateEstimate, MatchesTheFlowSimulationOnOneNode)
{
  for (const std::string plan : {"--model gpt-22b --plan paper --sp --recompute selective",
                                 "--hidden 1024 --heads 16 --layers 8 --seq-len 1024 --tp 2 --pp 2 --dp 2 "
                                 "--vocab 50257 --global-batch 16 --recompute full"})
    for (const std::string framework : {"none", "megatron-lm"}) {
      SCOPED_TRACE(plan + " / " + framework);
      const std::string args = "simulate " + plan + " --framework " + framework + " --json";
      const CliResult flows = run_gputwin(args, false), dag = run_gputwin(args + " --estimate", false);
      ASSERT_EQ(flows.exit_code, 0) << flows.output;
      ASSERT_EQ(dag.exit_code, 0) << dag.output;
      const double a = json_number(flows.output, "iteration_time_s"), b = json_number(dag.output, "iteration_time_s");
      EXPECT_NEAR(b / a, 1.0, plan.find("--dp 2") == std::string::npos ? 1e-9 : 1e-4);
      EXPECT_NEAR(json_number(dag.output, "bubble_fraction"), json_number(flows.output, "bubble_fraction"), 1e-4);
    }
}

// A host that issues each op: host-bound small models slow down, large ones barely change.
TEST(SimulateEstimate, TheHostModelSlowsSmallKernelsOnly)
{
  auto time = [](const std::string& args) {
    return json_number(run_gputwin("simulate " + args + " --estimate --json", false).output, "iteration_time_s");
  };
  const std::string small = "--hidden 1024 --heads 16 --layers 12 --seq-len 1024 --vocab 50257 --tp 8 --recompute full";
  const std::string large = "--model gpt3-175b --plan paper --sp --recompute selective";
  EXPECT_GT(time(small + " --framework megatron-lm") / time(small + " --framework none"), 1.3);
  EXPECT_LT(time(large + " --framework megatron-lm") / time(large + " --framework none"), 1.03);
}

TEST(CalibrateIterations, FitsWritesAModelFileThatCompareAccepts)
{
  // Every 40th row of vTrain's table: a small fit with 2 folds, then the same rows compared with its output. The
  // fit minimises the mean absolute log error, so its MAPE beats the unfitted profile's only once it has made
  // progress: 120 evaluations (40 gave 0.290 vs the profile's 0.278, 120 give 0.234; 3.4 s).
  std::ifstream in(vtrain);
  std::string line, subset;
  for (int n = 0; std::getline(in, line); ++n)
    if (n == 0 || n % 40 == 0)
      subset += line + "\n";
  const std::string csv = write_file("vtrain_subset.csv", subset), model = test_temp_path("vtrain.yaml");
  const CliResult fit = run_gputwin("calibrate --iterations '" + csv + "'" + vtrain_flags +
                                        " --framework megatron-deepspeed --folds 2 --max-evaluations 120 -o '" + model +
                                        "' --json",
                                    false);
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  EXPECT_EQ(json_number(fit.output, "rows"), 36);
  const double fitted = json_number(fit.output, "fitted_mape"), cv = json_number(fit.output, "cross_validated_mape");
  EXPECT_GT(fitted, 0);
  EXPECT_GE(cv, 0);
  const CliResult before = run_gputwin("compare --iterations '" + csv + "'" + vtrain_flags +
                                           " --framework megatron-deepspeed --json",
                                       false);
  const CliResult after =
      run_gputwin("compare --iterations '" + csv + "'" + vtrain_flags + " --gpu-model '" + model + "' --json", false);
  ASSERT_EQ(after.exit_code, 0) << after.output;
  EXPECT_EQ(json_number(after.output, "rows_compared"), 36);
  // The file carries the fitted framework too, and compare reproduces the fit's error.
  EXPECT_NE(after.output.find("\"framework\": \"megatron-deepspeed\""), std::string::npos) << after.output;
  EXPECT_NEAR(json_number(after.output, "mean_absolute_percentage_error"), fitted, 1e-9);
  EXPECT_LT(fitted, json_number(before.output, "mean_absolute_percentage_error"));
  // The calibration's own flags repeated: `--framework megatron-deepspeed` names the file's (fitted) framework and
  // keeps it; another framework replaces it.
  const CliResult repeated = run_gputwin("compare --iterations '" + csv + "'" + vtrain_flags + " --gpu-model '" +
                                             model + "' --framework megatron-deepspeed --json",
                                         false);
  EXPECT_NEAR(json_number(repeated.output, "mean_absolute_percentage_error"), fitted, 1e-9) << repeated.output;
  const CliResult other = run_gputwin("compare --iterations '" + csv + "'" + vtrain_flags + " --gpu-model '" + model +
                                          "' --framework megatron-lm --json",
                                      false);
  EXPECT_NE(other.output.find("\"framework\": \"megatron-lm\""), std::string::npos) << other.output;
  EXPECT_GT(std::abs(json_number(other.output, "mean_absolute_percentage_error") - fitted), 1e-3);
}

TEST(CalibrateIterations, BadTablesNameFileLineAndColumn)
{
  const std::string no_time = write_file("no_time.csv", "hidden,layers\n1024,12\n");
  expect_one_line_error("compare --iterations '" + no_time + "'", no_time + ":1: no iteration time column");
  const std::string bad_number = write_file("bad_number.csv", "hidden,heads,layers,seq_len,iteration_time_ms\n"
                                                              "1024,16,12,1024,12x\n");
  expect_one_line_error("compare --iterations '" + bad_number + "'",
                        bad_number + ":2:17: iteration_time_ms: expected a number, got '12x'");
  const std::string empty = write_file("empty.csv", "");
  expect_one_line_error("calibrate --iterations '" + empty + "' -o /tmp/x.yaml", empty + ": empty file");
  const std::string header_only = write_file("header_only.csv", "hidden,iteration_time_s\n");
  expect_one_line_error("compare --iterations '" + header_only + "'", header_only + ":1: no data rows");
  const std::string unknown = write_file("unknown.csv", "hidden,hiden,iteration_time_s\n1,2,3\n");
  expect_one_line_error("compare --iterations '" + unknown + "'", unknown + ":1:8: unknown column 'hiden'");
  const std::string short_row = write_file("short_row.csv", "hidden,iteration_time_s\n1024\n");
  expect_one_line_error("compare --iterations '" + short_row + "'", short_row + ":2: expected 2 fields");
  const std::string wrong_gpus = write_file("wrong_gpus.csv", "gpus,hidden,heads,layers,seq_len,tp,iteration_time_s\n"
                                                              "4,1024,16,12,1024,2,0.1\n");
  expect_one_line_error("compare --iterations '" + wrong_gpus + "' --vocab 50257",
                        wrong_gpus + ":2: GPUs: the row says 4 but tp x pp x dp = 2");
  expect_one_line_error("compare --iterations /nonexistent.csv", "/nonexistent.csv: cannot read");
  expect_one_line_error("simulate --model gpt-22b --plan paper --framework pytorch-xla",
                        "--framework: unknown framework 'pytorch-xla'");
}

} // namespace
} // namespace gputwin::testing
