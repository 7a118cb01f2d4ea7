// The B200 compute model's grouped expert GEMMs against measured kernels: the 108 grouped GEMMs of SimuMax's B200
// system file (tests/data/simumax-b200-one-node/grouped_gemm_efficiency.csv; MooreThreads/SimuMax
// configs/system/b200_bf16_ceperm.json `group_matmul.accurate_efficient_factor` at commit 4dcaae5, Apache-2.0):
// Transformer Engine's grouped GEMM on one B200 for the DeepSeek-V2/V3 expert shapes of its MoE rows (20 to 256
// local experts of 128 to 1232 tokens each), forward, input gradient and weight gradient (accumulated into an FP32
// or BF16 main_grad), each as a fraction of the 2250 TF/s BF16 peak. A kernel's time is 2 E M N K / (fraction x
// 2250e12); gputwin's is the op its workload emits (models/workload/op_vocabulary.cpp expert_gemm / expert_wgrad:
// E GEMMs of m x n x k, the weight gradient reducing over the tokens), timed by compute_duration_s. Nothing was fitted
// to these kernels.
//
// Measured (2026-11-29, B200's own XLA GEMM table; 10.5 % with H100's), gputwin / measured time - 1:
//   experts of >= 1000 tokens (the shapes of EP 8..32 on 4096-token micro-batches): mean |error| 9.6 % over 24
//   kernels (forward -5..+25 %, input gradient -9..+15 %, weight gradient -25..+2 %);
//   experts of 128-616 tokens: 30-73 % too fast. Transformer Engine runs a grouped GEMM as one cuBLAS GEMM per expert
//   over a few streams, so a small expert's GEMM fills a fraction of the SMs and pays its own launch; the model times
//   the group as one batched grid. Not modelled yet: the known gap for fine-grained experts at small EP.
// The same kernels measured twice in the file (fp32 and bf16 main_grad: forward and input-gradient GEMMs do not
// touch main_grad) differ by up to ~12 %: the measurements' own spread.
// Bound: the >= 1000-token kernels' mean |error| <= 12 % (today's 10.5 % within that spread); the small experts are
// printed, not bounded.
#include "csv_cells.hpp"

#include "gputwin/models/gpu_compute_model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

namespace gputwin::testing {
namespace {

TEST(SimuMaxGroupedGemm, B200ExpertGemmsAgainstMeasuredKernels)
{
  const GpuComputeModel b200 = builtin_compute_model(GpuGeneration::Blackwell, "b200-sxm-180gb", 2250e12, 7.7e12, 4500e12);
  std::map<std::string, std::pair<double, int>> error_by_stage; // stage -> (sum |error|, rows)
  double large_sum = 0; // |error| of the experts of >= 1000 tokens (fp32 main_grad, the default)
  int large_rows = 0;
  for (const std::vector<std::string>& f :
       csv_data_rows(GPUTWIN_TEST_DATA_DIR "/simumax-b200-one-node/grouped_gemm_efficiency.csv", 7)) {
    const int64_t experts = std::stoll(f[0]), tokens = std::stoll(f[1]), n = std::stoll(f[2]), k = std::stoll(f[3]);
    const std::string& stage = f[4];
    const double fraction = std::stod(f[6]);
    traces::Op op;
    op.kind = traces::OpKind::Compute;
    op.name = stage == "fwd" ? "expert.fc1.fwd" : stage == "bwd_grad_act" ? "expert.fc1.dgrad" : "expert.fc1.wgrad";
    op.flops = 2.0 * static_cast<double>(experts) * static_cast<double>(tokens) * static_cast<double>(n) *
               static_cast<double>(k);
    // Layer weight k x n (input k, output n): forward m x n x k, input gradient m x k x n, weight gradient n x k x m.
    if (stage == "fwd")
      op.gemm = {tokens, n, k, experts};
    else if (stage == "bwd_grad_act")
      op.gemm = {tokens, k, n, experts};
    else
      op.gemm = {n, k, tokens, experts};
    const double measured_s = op.flops / (fraction * 2250e12);
    const double error = compute_duration_s(b200, op) / measured_s - 1;
    const std::string key = stage + " (" + f[5] + " main_grad)";
    error_by_stage[key].first += std::fabs(error);
    error_by_stage[key].second += 1;
    if (tokens >= 1000 && f[5] == "fp32") {
      large_sum += std::fabs(error);
      ++large_rows;
    }
    std::printf("%3lld experts x %4lld tokens, n %5lld k %5lld %-12s %-4s measured %.3f  gputwin %+6.1f %%\n",
                static_cast<long long>(experts), static_cast<long long>(tokens), static_cast<long long>(n),
                static_cast<long long>(k), stage.c_str(), f[5].c_str(), fraction, 100 * error);
  }
  for (const auto& [stage, sum] : error_by_stage)
    std::printf("%-32s mean |error| %.1f %% over %d kernels\n", stage.c_str(), 100 * sum.first / sum.second, sum.second);
  ASSERT_EQ(error_by_stage.size(), 6u);
  ASSERT_EQ(large_rows, 24);
  std::printf("experts of >= 1000 tokens: mean |error| %.1f %% over %d kernels\n", 100 * large_sum / large_rows,
              large_rows);
  EXPECT_LE(large_sum / large_rows, 0.12);
}

} // namespace
} // namespace gputwin::testing
