// Validation against NVIDIA's measured NeMo step times of Llama 3.1 8B, 70B and 405B on DGX H100, BF16 and FP8,
// 8-2304 GPUs, in two NeMo releases (24.09 and 24.12): tests/data/dgxc-llama31-h100/ (NVIDIA dgxc-benchmarking
// v24.11.1 and v25.02, Apache-2.0); and of GPT-3 175B from the same releases (tests/data/dgxc-gpt3-h100/, below). Every row is simulated as a user would: the catalogue model, the recipe's plan
// and options, the built-in H100 compute model -- nothing fitted to these rows.
//
// Bounds (2026-11-30, what the model achieves, as a regression guard; issue 25's target for today's stack is a
// mean error <= 5 %): all 68 rows MAPE 7.5 % (bound 8 %; 8.3 % before TE's context-parallel copies, op_vocabulary.cpp
// cp_copy_cost; the same with --framework nemo), every row within 17 % (worst -16.3 %, 70B FP8 on 2048 GPUs, NeMo
// 24.09); the 405B rows -- the full model on 576-2304 GPUs and configure.sh's 7/21/42-layer proxies on 32-192 GPUs
// -- MAPE 2.9 %, each within 8 % (-6.9 % FP8 on 2304 GPUs in 24.09, whose step jumps 9 % there; +6.9 % the 21-layer
// FP8 proxy in 24.12). Not met: the 8B (TP 1, CP 2) and 70B (TP 4, PP 4 x5, CP 2) rows are 6-16 % faster in the
// model than measured (mean -9.6 % and -10.2 %), and the measured step grows 1-5 % from the smallest to the largest
// scale where the model stays flat (README "Validation").
#include "csv_cells.hpp"
#include "json_report.hpp"
#include "run_cli.hpp"

#include "gputwin/traces/json_value.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace gputwin::testing {
namespace {

struct Row {
  std::string nemo, model, precision;
  int64_t gpus = 0, seq = 0, layers = 0, tp = 0, pp = 0, cp = 0, dp = 0, vp = 0, micro_batch = 0, global_batch = 0;
  double measured_s = 0;
};

// nemo,model,precision,gpus,seq_len,layers,tp,pp,cp,dp,vp,micro_batch,global_batch,step_time_s
std::vector<Row> rows(const std::string& csv)
{
  std::vector<Row> out;
  for (const std::vector<std::string>& f : csv_data_rows(csv, 14)) {
    Row r;
    r.nemo = f[0];
    r.model = f[1];
    r.precision = f[2];
    r.gpus = std::stoll(f[3]);
    r.seq = std::stoll(f[4]);
    r.layers = std::stoll(f[5]);
    r.tp = std::stoll(f[6]);
    r.pp = std::stoll(f[7]);
    r.cp = std::stoll(f[8]);
    r.dp = std::stoll(f[9]);
    r.vp = std::stoll(f[10]);
    r.micro_batch = std::stoll(f[11]);
    r.global_batch = std::stoll(f[12]);
    r.measured_s = std::stod(f[13]);
    out.push_back(r);
  }
  return out;
}

// The recipe as `gputwin simulate --estimate` flags (dgxc-benchmarking 8f5cbb3, llama3.1/llama3.1_{8b,70b,405b}.yaml
// and configure.sh): the default host (megatron-core: NeMo 1.0's launcher hands Apex's distributed Adam to the
// schedules as their grad_sync_func, sim/README.md "Host issue model"); distributed_fused_adam with
// overlapped gradient and parameter syncs and grad_sync_dtype bf16 (--zero 1 --overlap-grad-reduce --overlap-param-gather
// --grad-reduce-in-bf16); cross_entropy_loss_fusion; flash attention (dgx-h100's default); with tp > 1 sequence
// parallelism and TE's userbuffers overlap (ub_tp_comm_overlap: true); FP8 rows fp8_hybrid delayed scaling with
// FP8 parameters (+model.fp8_params, --fp8's default with --zero 1).
std::string flags(const Row& r)
{
  std::string f = "simulate --estimate --model " + r.model + " --layers " + std::to_string(r.layers) +
                  " --cluster dgx-h100 --nodes " + std::to_string(r.gpus / 8) + " --tp " + std::to_string(r.tp) +
                  " --pp " + std::to_string(r.pp) + " --cp " + std::to_string(r.cp) + " --dp " +
                  std::to_string(r.dp) + " --micro-batch " + std::to_string(r.micro_batch) + " --global-batch " +
                  std::to_string(r.global_batch) + " --seq-len " + std::to_string(r.seq) +
                  " --zero 1 --overlap-grad-reduce --overlap-param-gather --grad-reduce-in-bf16 --allow-oom --json";
  if (r.model != "gpt3-175b") // the Llama recipes set cross_entropy_loss_fusion; GPT-3's does not
    f += " --cross-entropy-fusion";
  if (r.tp > 1)
    f += " --sp --tp-comm-overlap";
  if (r.vp > 1)
    f += " --schedule interleaved --chunks " + std::to_string(r.vp);
  if (r.precision == "fp8")
    f += " --fp8";
  return f;
}

double error_of(const Row& r)
{
  const std::string arguments = flags(r);
  const traces::JsonValue report = cli_json_report(arguments);
  EXPECT_EQ(member(report, "framework").text, "megatron-core");
  EXPECT_EQ(member(member(report, "plan"), "attention").text, "flash");
  EXPECT_EQ(number(member(report, "model"), "layers"), static_cast<double>(r.layers));
  return number(report, "iteration_time_s") / r.measured_s - 1;
}

TEST(DgxcLlama31H100Validation, SixtyEightMeasuredStepsOfTwoNemoReleases)
{
  const std::vector<Row> all = rows(GPUTWIN_TEST_DATA_DIR "/dgxc-llama31-h100/step_times.csv");
  ASSERT_EQ(all.size(), 68u);
  double sum = 0, sum_405b = 0;
  int rows_405b = 0;
  for (const Row& r : all) {
    SCOPED_TRACE("NeMo " + r.nemo + " " + r.model + " " + r.precision + " " + std::to_string(r.gpus) + " GPUs, " +
                 std::to_string(r.layers) + " layers");
    const double error = error_of(r);
    std::printf("NeMo %s %-11s %-4s %4lld GPUs %3lld layers: measured %6.2f s, error %+6.1f %%\n", r.nemo.c_str(),
                r.model.c_str(), r.precision.c_str(), static_cast<long long>(r.gpus),
                static_cast<long long>(r.layers), r.measured_s, 100 * error);
    EXPECT_LE(std::abs(error), 0.17);
    sum += std::abs(error);
    if (r.model == "llama3-405b") {
      EXPECT_LE(std::abs(error), 0.08);
      sum_405b += std::abs(error);
      ++rows_405b;
    }
  }
  ASSERT_EQ(rows_405b, 24);
  const double mape = sum / static_cast<double>(all.size());
  std::printf("all 68 rows MAPE %.2f %%, the 24 405B rows %.2f %%\n", 100 * mape, 100 * sum_405b / rows_405b);
  EXPECT_LE(mape, 0.08);
}

// GPT-3 175B on 128-2048 H100 (tests/data/dgxc-gpt3-h100/: NeMo 24.05 and 24.12, BF16 and FP8, TP 4 PP 8 with 12
// or 6 virtual stages), the same recipe flags. Bounds (2026-11-30, a regression guard): MAPE 6.2 % (bound 7 %), every
// row within 19 % (worst -18.0 %, 24.05 FP8 on 1024 GPUs, whose step sits 8 % above its 2048-GPU neighbour; the
// others within 15 %); by release and precision: 24.12 BF16 +1.4..+3.7 %, FP8 -3.1..-8.1 %; 24.05 BF16 -3.8..-5.9 %,
// FP8 -7.6..-18.0 % -- FP8 too fast, the more so the more GPUs: the measured steps grow 2-6 % from 128 to 2048, the
// model's stay flat.
TEST(DgxcGpt3H100Validation, TwentyMeasuredStepsOfTwoNemoReleases)
{
  const std::vector<Row> all = rows(GPUTWIN_TEST_DATA_DIR "/dgxc-gpt3-h100/step_times.csv");
  ASSERT_EQ(all.size(), 20u);
  double sum = 0;
  for (const Row& r : all) {
    SCOPED_TRACE("NeMo " + r.nemo + " " + r.precision + " " + std::to_string(r.gpus) + " GPUs");
    const double error = error_of(r);
    std::printf("NeMo %s gpt3-175b %-4s %4lld GPUs vp %2lld: measured %6.3f s, error %+6.1f %%\n", r.nemo.c_str(),
                r.precision.c_str(), static_cast<long long>(r.gpus), static_cast<long long>(r.vp), r.measured_s,
                100 * error);
    EXPECT_LE(std::abs(error), 0.19);
    sum += std::abs(error);
  }
  std::printf("GPT-3 175B MAPE %.2f %%\n", 100 * sum / static_cast<double>(all.size()));
  EXPECT_LE(sum / static_cast<double>(all.size()), 0.07);
}

} // namespace
} // namespace gputwin::testing
