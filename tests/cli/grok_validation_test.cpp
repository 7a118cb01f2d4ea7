// Validation against NVIDIA's measured Grok-1 314B (8 experts, top-2) training steps (tests/data/moe/: 128-512 GPUs
// of GB200 NVL72 racks at TP 4, EP 8, ETP 4, and 512 H100 at TP 4, PP 8 x8, CP 2, EP 8; BF16 and FP8; NVIDIA
// dgxc-benchmarking v25.05.04, MIT). Nothing is fitted to these rows: the catalogue model, the built-in compute
// models (GB200's GEMM level is fitted on NVIDIA's dense Nemotron-4 340B GB200 rows, tests/data/dgxc-dense), the
// framework NeMo runs (--framework nemo: Megatron-Core's host, gradient reductions not aligned by the schedule), and
// the recipe as NVIDIA ran it -- NeMo 25.04 (NVIDIA/NeMo 6b28b91e51
// scripts/performance/llm/pretrain_grok1_314b.py, scripts/performance/utils.py set_primary_perf_configs) and the
// dgxc launcher (grok1/launch.sh: CUDA graphs on GB200, not on H100): sequence parallelism, the distributed
// optimizer with overlapped gradient reduce-scatter and parameter all-gather, TE userbuffers TP overlap, gradients
// reduced in BF16, TE's fused cross entropy, FP8 with FP8 parameters. `scripts/moe-validation.py` prints the same rows.
//
// Bounds (2026-11-29, what the model achieves, as a regression guard; issue 27's target is <= 10 % mean error):
// GB200 rows MAPE 4.77 % with the fast estimate (4.70 % before Grace's host_issue_scale), 4.8 % fully simulated (bound 6 %; 37.8 % with B200's GEMM level
// and no recipe overlaps, 18.0 % with GB200's level alone), every GB200 row within 10 % (worst +8.2 %); H100 BF16 -1.9 % (bound 5 %). Not met: H100 FP8 -16.3 % (bound
// 25 %; -20.7 % before Hopper's FP8 split accumulator).
#include "csv_cells.hpp"
#include "json_report.hpp"
#include "run_cli.hpp"

#include "gputwin/traces/json_value.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace gputwin::testing {
namespace {

// model,system,precision,gpus,seq_len,layers,tp,pp,cp,ep,etp,dp,vp,micro_batch,global_batch,grad_accum,step_time_s
enum Column {
  System = 1, Precision, Gpus, Seq, Tp = 6, Pp, Cp, Ep, Etp, Dp, Vp, MicroBatch, GlobalBatch, Measured = 16
};

std::string flags(const std::vector<std::string>& f)
{
  const int64_t gpus_per_node = f[System] == "gb200-nvl72" ? 4 : 8;
  std::string a = "simulate --estimate --model grok-1 --cluster " + f[System] + " --nodes " +
                  std::to_string(std::stoll(f[Gpus]) / gpus_per_node) + " --tp " + f[Tp] + " --pp " + f[Pp] +
                  " --cp " + f[Cp] + " --ep " + f[Ep] + " --etp " + f[Etp] + " --dp " + f[Dp] + " --seq-len " +
                  f[Seq] + " --micro-batch " + f[MicroBatch] + " --global-batch " + f[GlobalBatch] +
                  " --sp --zero 1 --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap --grad-reduce-in-bf16"
                  " --cross-entropy-fusion --framework nemo --allow-oom --json";
  if (std::stoll(f[Vp]) > 1)
    a += " --schedule interleaved --chunks " + f[Vp];
  if (f[System] == "gb200-nvl72")
    a += " --cuda-graphs";
  if (f[Precision] == "fp8")
    a += " --fp8";
  return a;
}

double error_of(const std::vector<std::string>& f)
{
  const std::string arguments = flags(f);
  const traces::JsonValue report = cli_json_report(arguments);
  EXPECT_EQ(member(report, "framework").text, "nemo");
  const double error = number(report, "iteration_time_s") / std::stod(f[Measured]) - 1;
  std::printf("grok-1 %-12s %-4s %4s GPUs: measured %7s s, error %+6.1f %%\n", f[System].c_str(), f[Precision].c_str(),
              f[Gpus].c_str(), f[Measured].c_str(), 100 * error);
  return error;
}

TEST(GrokValidation, GB200RowsWithinTenPercent)
{
  const std::vector<std::vector<std::string>> rows = csv_data_rows(GPUTWIN_TEST_DATA_DIR "/moe/grok1-gb200.csv", 17);
  ASSERT_EQ(rows.size(), 6u);
  double sum = 0;
  for (const std::vector<std::string>& f : rows) {
    SCOPED_TRACE(f[Precision] + " " + f[Gpus] + " GPUs");
    const double error = error_of(f);
    EXPECT_LE(std::abs(error), 0.10);
    sum += std::abs(error);
  }
  std::printf("GB200 MAPE %.2f %%\n", 100 * sum / static_cast<double>(rows.size()));
  EXPECT_LE(sum / static_cast<double>(rows.size()), 0.06);
}

TEST(GrokValidation, H100Rows)
{
  const std::vector<std::vector<std::string>> rows = csv_data_rows(GPUTWIN_TEST_DATA_DIR "/moe/grok1-h100.csv", 17);
  ASSERT_EQ(rows.size(), 2u);
  for (const std::vector<std::string>& f : rows) {
    SCOPED_TRACE(f[Precision]);
    EXPECT_LE(std::abs(error_of(f)), f[Precision] == "bf16" ? 0.05 : 0.25);
  }
}

} // namespace
} // namespace gputwin::testing
