// Validation of context parallelism at long sequences against NVIDIA's NeMo figures (tests/data/nemo-long-context/:
// Llama 2 7B on H100, NeMo 24.03, 4K-1M tokens; Llama 3 8B on B200, NeMo 25.04, 8K-1M; FP8; NVIDIA/NeMo docs,
// Apache-2.0). Every row simulated as a user would: the model, the row's plan, the cluster's built-in compute
// model and default framework, the fast estimate; nothing fitted.
//
// Bounds (2026-11-30, what the model achieves, as a regression guard):
//   - B200 (today's software): MAPE 4.7 % (bound 6 %), every row within 13 % (the CP rows +0.2..+5.7 %, the two
//     rows without CP +11.2 / +11.8 %: the B200 GEMM level, issue 28); 4.2 % before TE's context-parallel copies.
//   - H100 (NeMo 24.03, early 2024): MAPE 26.3 % (bound 30 %; 27.1 % before the copies), every row 17-32 % fast,
//     the error growing with the sequence, where attention dominates -- likely 2024's TE and cuDNN running long
//     causal attention below the FlashAttention-3 paper's cuDNN curve the model uses (not measured); the short rows
//     are already 17-24 % fast, the small-model gap of DgxcLlama31H100Validation. Not met.
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
  std::string system, model;
  int64_t seq = 0, global_batch = 0, tp = 0, pp = 0, dp = 0, cp = 0;
  double tflops_per_gpu = 0;
  int64_t gpus() const { return tp * pp * dp * cp; }
};

std::vector<Row> rows()
{
  // system,model,precision,nemo,seq_len,global_batch,tp,pp,dp,cp,model_tflops_per_gpu
  std::vector<Row> out;
  for (const std::vector<std::string>& f :
       csv_data_rows(GPUTWIN_TEST_DATA_DIR "/nemo-long-context/measurements.csv", 11)) {
    Row r;
    r.system = f[0];
    r.model = f[1];
    r.seq = std::stoll(f[4]);
    r.global_batch = std::stoll(f[5]);
    r.tp = std::stoll(f[6]);
    r.pp = std::stoll(f[7]);
    r.dp = std::stoll(f[8]);
    r.cp = std::stoll(f[9]);
    r.tflops_per_gpu = std::stod(f[10]);
    out.push_back(r);
  }
  return out;
}

// The plan as `gputwin simulate --estimate` flags: FP8 with the distributed optimizer and its overlaps, sequence
// parallelism and TE's TP overlap where tp > 1 (NeMo's performance configurations).
std::string flags(const Row& r)
{
  const std::string model =
      r.model == "llama2-7b" ? std::string("'" GPUTWIN_TEST_DATA_DIR "/nemo-long-context/llama2-7b.yaml'") : r.model;
  std::string f = "simulate --estimate --model " + model + " --seq-len " + std::to_string(r.seq) + " --cluster " +
                  r.system + " --nodes " + std::to_string((r.gpus() + 7) / 8) + " --tp " + std::to_string(r.tp) +
                  " --pp " + std::to_string(r.pp) + " --dp " + std::to_string(r.dp) + " --cp " +
                  std::to_string(r.cp) + " --micro-batch 1 --global-batch " + std::to_string(r.global_batch) +
                  " --fp8 --zero 1 --overlap-grad-reduce --overlap-param-gather --allow-oom --json";
  if (r.tp > 1)
    f += " --sp --tp-comm-overlap";
  return f;
}

// Simulated step over measured step (model FLOPs over the measured rate and the GPUs), minus 1.
double error_of(const Row& r)
{
  const std::string arguments = flags(r);
  const traces::JsonValue report = cli_json_report(arguments);
  EXPECT_EQ(number(report, "gpus"), static_cast<double>(r.gpus()));
  EXPECT_EQ(member(member(report, "plan"), "attention").text, "flash");
  const double measured_s = number(report, "model_flops") / (r.tflops_per_gpu * 1e12 * static_cast<double>(r.gpus()));
  return number(report, "iteration_time_s") / measured_s - 1;
}

TEST(LongContextValidation, NemoContextParallelRunsOnH100AndB200)
{
  const std::vector<Row> all = rows();
  ASSERT_EQ(all.size(), 17u);
  double b200_sum = 0, h100_sum = 0;
  int b200_rows = 0, h100_rows = 0;
  for (const Row& r : all) {
    SCOPED_TRACE(r.system + " " + r.model + " seq " + std::to_string(r.seq) + " cp " + std::to_string(r.cp));
    const double error = error_of(r);
    std::printf("%-9s %-9s seq %7lld tp %lld pp %lld dp %lld cp %2lld: measured %5.0f TFLOP/s a GPU, error %+6.1f %%\n",
                r.system.c_str(), r.model.c_str(), static_cast<long long>(r.seq), static_cast<long long>(r.tp),
                static_cast<long long>(r.pp), static_cast<long long>(r.dp), static_cast<long long>(r.cp),
                r.tflops_per_gpu, 100 * error);
    if (r.system == "dgx-b200") {
      EXPECT_LE(std::abs(error), 0.13);
      b200_sum += std::abs(error);
      ++b200_rows;
    } else {
      h100_sum += std::abs(error);
      ++h100_rows;
    }
  }
  ASSERT_EQ(b200_rows, 8);
  ASSERT_EQ(h100_rows, 9);
  std::printf("B200 MAPE %.2f %%, H100 (NeMo 24.03) MAPE %.2f %%\n", 100 * b200_sum / b200_rows,
              100 * h100_sum / h100_rows);
  EXPECT_LE(b200_sum / b200_rows, 0.06);
  EXPECT_LE(h100_sum / h100_rows, 0.30);
}

} // namespace
} // namespace gputwin::testing
