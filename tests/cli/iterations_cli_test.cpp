// `gputwin simulate --estimate`, `calibrate --iterations` and `compare --iterations` through the real binary.
#include "json_report.hpp"
#include "run_cli.hpp"
#include "test_temp_path.hpp"

#include "gputwin/traces/json_value.hpp"

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
  const std::string wrong_gpus = write_file("wrong_gpus.csv", "gpus,hidden,heads,layers,seq_len,tp,dp,iteration_time_s\n"
                                                              "4,1024,16,12,1024,2,1,0.1\n");
  expect_one_line_error("compare --iterations '" + wrong_gpus + "' --vocab 50257",
                        wrong_gpus + ":2: GPUs: the row says 4 but tp x cp x pp x dp = 2");
  expect_one_line_error("compare --iterations /nonexistent.csv", "/nonexistent.csv: cannot read");
  expect_one_line_error("simulate --model gpt-22b --plan paper --framework pytorch-xla",
                        "--framework: unknown framework 'pytorch-xla'");
}

// NVIDIA dgxc-benchmarking's step_times.csv (tests/data/nemotron4-h100-dgxc/): its header, and rows of it.
const std::string dgxc_header = "model,precision,gpus,global_batch,micro_batch,grad_accum,tp,pp,vp,cp,seq_len,step_time_s\n";
const std::string dgxc_15b_bf16 = "nemotron4-15b,bf16,16,64,4,4,4,1,1,1,4096,2.812\n";
const std::string dgxc_15b_fp8 = "nemotron4-15b,fp8,16,64,4,4,4,1,1,1,4096,2.039\n";
const std::string dgxc_340b_bf16 = "nemotron4-340b,bf16,128,32,1,16,8,8,12,1,4096,4.61\n";
const std::string dgxc_340b_fp8 = "nemotron4-340b,fp8,128,32,1,16,8,8,12,1,4096,3.16\n";
const std::string dgxc_flags =
    " --cluster dgx-h100 --sp --zero 1 --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap";

// Each row's plan as the compare report describes it, in row order.
std::vector<traces::JsonValue> compared_rows(const std::string& csv, const std::string& flags)
{
  const CliResult r = run_gputwin("compare --iterations '" + csv + "'" + flags + " --json", false);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (r.exit_code != 0)
    return {};
  const traces::JsonValue report = traces::parse_json(r.output.substr(r.output.find('{')));
  EXPECT_EQ(member(report, "framework").text, "megatron-core"); // dgx-h100's default, as simulate's
  return member(report, "rows").items;
}

// precision -> --fp8, vp > 1 -> the interleaved schedule with vp chunks, dp from gpus / (tp x cp x pp), cp, the
// step time in seconds, dgx-h100's flash attention, and the command line's overlaps on every row.
TEST(CompareIterations, ReadsDgxcStepTimes)
{
  const std::string csv = write_file("dgxc.csv", dgxc_header + dgxc_15b_bf16 + dgxc_15b_fp8 + dgxc_340b_bf16 +
                                                     "nemotron4-15b,bf16,32,64,2,4,2,1,1,2,4096,3.0\n");
  const std::vector<traces::JsonValue> rows = compared_rows(csv, dgxc_flags);
  ASSERT_EQ(rows.size(), 4u);
  const std::vector<std::string> plans = {
      "tp 4 · pp 1 · dp 4 · micro-batch 4 · global batch 64 (4 micro-batches per pipeline) · SP · recompute none · "
      "flash attention · 1f1b · ZeRO-1",
      "tp 4 · pp 1 · dp 4 · micro-batch 4 · global batch 64 (4 micro-batches per pipeline) · SP · recompute none · "
      "flash attention · 1f1b · ZeRO-1 · FP8 (FP8 param gather)",
      "tp 8 · pp 8 · dp 2 · micro-batch 1 · global batch 32 (16 micro-batches per pipeline) · SP · recompute none · "
      "flash attention · interleaved x12 chunks · ZeRO-1"};
  for (size_t i = 0; i < plans.size(); ++i) {
    EXPECT_EQ(member(rows[i], "plan").text, plans[i]);
    EXPECT_TRUE(member(rows[i], "overlap_grad_reduce").boolean);
    EXPECT_TRUE(member(rows[i], "overlap_param_gather").boolean);
    EXPECT_TRUE(member(rows[i], "tp_comm_overlap").boolean);
  }
  EXPECT_NE(member(rows[3], "plan").text.find("tp 2 · cp 2 · pp 1 · dp 8"), std::string::npos)
      << member(rows[3], "plan").text;
  EXPECT_EQ(number(rows[2], "measured_s"), 4.61);
  EXPECT_LT(number(rows[1], "simulated_s"), 0.8 * number(rows[0], "simulated_s")); // FP8 GEMMs
  // The overlaps reach the workloads: without them every row takes another time (the 15B rows longer: their
  // gradient reduction and TP transfers are exposed), and the report says they are off.
  const std::vector<traces::JsonValue> plain = compared_rows(csv, " --cluster dgx-h100 --sp --zero 1");
  ASSERT_EQ(plain.size(), 4u);
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_FALSE(member(plain[i], "tp_comm_overlap").boolean);
    EXPECT_GT(std::abs(number(plain[i], "simulated_s") / number(rows[i], "simulated_s") - 1), 1e-3) << i;
    if (i != 2) {
      EXPECT_GT(number(plain[i], "simulated_s"), number(rows[i], "simulated_s")) << i;
    }
  }
}

TEST(CompareIterations, BadDgxcRowsAreOneLineErrors)
{
  const std::string fp16 = write_file("fp16.csv", dgxc_header + "nemotron4-15b,fp16,16,64,4,4,4,1,1,1,4096,2.8\n");
  expect_one_line_error("compare --iterations '" + fp16 + "'" + dgxc_flags,
                        fp16 + ":2:15: precision: expected bf16 or fp8, got 'fp16'");
  const std::string accum = write_file("accum.csv", dgxc_header + dgxc_15b_bf16 +
                                                        "nemotron4-15b,bf16,16,64,4,8,4,1,1,1,4096,2.8\n");
  expect_one_line_error("compare --iterations '" + accum + "'" + dgxc_flags,
                        accum + ":3:28: grad_accum: the row says 8 but global_batch / (micro_batch x dp) = 64 / (4 x "
                                "4) = 4");
  const std::string gpus = write_file("gpus.csv", dgxc_header + "nemotron4-15b,bf16,18,64,4,4,4,1,1,1,4096,2.8\n");
  expect_one_line_error("compare --iterations '" + gpus + "'" + dgxc_flags,
                        gpus + ":2: GPUs: 18 is not a multiple of tp x cp x pp = 4");
  const std::string vp = write_file("vp.csv", dgxc_header + "nemotron4-340b,bf16,128,32,1,16,8,8,0,1,4096,4.6\n");
  expect_one_line_error("compare --iterations '" + vp + "'" + dgxc_flags,
                        vp + ":2:37: vp: expected a positive integer, got '0'");
  const std::string good = write_file("good.csv", dgxc_header + dgxc_15b_bf16);
  expect_one_line_error("compare --iterations '" + good + "' --cluster dgx-h100 --no-sp --tp-comm-overlap",
                        good + ":2: --tp-comm-overlap: contradicts --no-sp");
  const std::string fp8 = write_file("fp8.csv", dgxc_header + dgxc_15b_fp8);
  expect_one_line_error("compare --iterations '" + fp8 + "' --cluster dgx-a100 --sp --zero 1",
                        fp8 + ":2: --fp8: the a100");
}

// A calibration on four rows of the dgxc table, 2 of each model: folds by model (fit on one, predict the other),
// the uncalibrated error equal to compare's, the fit better than it on the rows it saw.
TEST(CalibrateIterations, FoldsByModelOnDgxcRows)
{
  const std::string csv =
      write_file("dgxc_fit.csv", dgxc_header + dgxc_15b_bf16 + dgxc_15b_fp8 + dgxc_340b_bf16 + dgxc_340b_fp8);
  const std::string model = test_temp_path("dgxc.yaml");
  const CliResult fit = run_gputwin("calibrate --iterations '" + csv + "'" + dgxc_flags +
                                        " --max-evaluations 60 --threads 2 -o '" + model + "' --json",
                                    false);
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  const traces::JsonValue report = traces::parse_json(fit.output.substr(fit.output.find('{')));
  EXPECT_EQ(number(report, "rows"), 4);
  EXPECT_EQ(number(report, "folds"), 2);
  const std::vector<traces::JsonValue>& folds = member(report, "cross_validation").items;
  ASSERT_EQ(folds.size(), 2u);
  EXPECT_EQ(member(folds[0], "held_out").text, "nemotron4-15b");
  EXPECT_EQ(member(folds[1], "held_out").text, "nemotron4-340b");
  EXPECT_EQ(number(folds[0], "rows"), 2);
  EXPECT_NEAR((number(folds[0], "mape") + number(folds[1], "mape")) / 2, number(report, "cross_validated_mape"), 1e-12);
  const CliResult before = run_gputwin("compare --iterations '" + csv + "'" + dgxc_flags + " --json", false);
  EXPECT_NEAR(json_number(before.output, "mean_absolute_percentage_error"), number(report, "uncalibrated_mape"), 1e-12);
  EXPECT_LT(number(report, "fitted_mape"), number(report, "uncalibrated_mape"));
}

} // namespace
} // namespace gputwin::testing
