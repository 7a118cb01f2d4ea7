// Validation against NVIDIA's measured NeMo step times of dense models on GB200 NVL72 racks and DGX H100
// (tests/data/dgxc-dense/: Nemotron-4 340B and Llama 3.1 405B on 128-512 GB200, Llama 3.1 405B and Nemotron-4
// 15B/340B on H100; NVIDIA dgxc-benchmarking v25.05.04, MIT). Every row is simulated as a user would: the catalogue
// model, the recipe's plan and overlaps, the cluster's built-in compute model and default framework (megatron-core),
// the fast estimate.
//
// What was fitted: the GB200 / GB300 GEMM level (gemm_efficiency 0.64, models/compute/src/gpu_compute_model.cpp) on
// the six Nemotron-4 340B BF16 GB200 rows -- nothing else; the other 18 rows are held out.
// Bounds (2026-11-29, what the model achieves, as a regression guard; the target for Blackwell is <= 8 % mean error):
//   - GB200 BF16 fit rows: MAPE 1.74 % (bound 3 %; 1.63 % at the fit, before Grace's host_issue_scale 1.9);
//   - GB200 BF16 held out (Llama 3.1 405B, 128-512 GPUs): -1.7..-3.0 % (bound 5 % each; +21..+23 % at the B200 level);
//   - every row within 17 %, all 24 rows MAPE <= 6.5 % (today 5.18 %, 5.36 % before TE's context-parallel copies, 5.42 % before Grace's host_issue_scale; 6.06 % before Hopper's FP8 split accumulator,
//     15.5 % with the B200 level and without the recipes' BF16 gradient reduction, fused cross entropy and CUDA
//     graphs). Not met: GB200 FP8 runs are 3-13 % faster in the model than measured, Nemotron-4 15B 9-10 % fast,
//     and the 512-GPU weak-scaling Nemotron BF16 row +7 % (its data-parallel collectives cross racks).
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
  std::string model, system, precision;
  int64_t gpus = 0, seq = 0, tp = 0, pp = 0, cp = 0, dp = 0, vp = 0, micro_batch = 0, global_batch = 0;
  int64_t first_stage_layers = 0, last_stage_layers = 0;
  double measured_s = 0;
};

std::vector<Row> rows()
{
  // model,system,precision,gpus,seq_len,layers,tp,pp,cp,dp,vp,micro_batch,global_batch,first_stage_layers,
  // last_stage_layers,step_time_s
  std::vector<Row> out;
  for (const std::vector<std::string>& f : csv_data_rows(GPUTWIN_TEST_DATA_DIR "/dgxc-dense/step_times.csv", 16)) {
    Row r;
    r.model = f[0];
    r.system = f[1];
    r.precision = f[2];
    r.gpus = std::stoll(f[3]);
    r.seq = std::stoll(f[4]);
    r.tp = std::stoll(f[6]);
    r.pp = std::stoll(f[7]);
    r.cp = std::stoll(f[8]);
    r.dp = std::stoll(f[9]);
    r.vp = std::stoll(f[10]);
    r.micro_batch = std::stoll(f[11]);
    r.global_batch = std::stoll(f[12]);
    r.first_stage_layers = std::stoll(f[13]);
    r.last_stage_layers = std::stoll(f[14]);
    r.measured_s = std::stod(f[15]);
    out.push_back(r);
  }
  return out;
}

// The recipe as `gputwin simulate --estimate` flags: flash attention is the clusters' default, the framework is
// NeMo's (--framework nemo: Megatron-Core's host, gradient reductions started by the hooks, not aligned by the
// schedule: FrameworkProfile::align_grad_reduce). NeMo 25.04's performance scripts (NVIDIA/NeMo v2.3.0 scripts/performance/utils.py set_primary_perf_configs and
// the llama31_405b / nemotron4_340b / nemotron4_15b recipes' pretrain_performance_optimizations): sequence
// parallelism, the distributed optimizer with overlapped reduce-scatter and all-gather, TE userbuffers TP overlap,
// gradients reduced in BF16 (grad_reduce_in_fp32 = False), TE's fused cross entropy (cross_entropy_fusion_impl
// "te"), FP8 with FP8 parameters (bf16_with_fp8_mixed); the dgxc launcher adds CUDA graphs for Nemotron on GB200
// (nemotron/launch.sh: --cuda_graphs true).
std::string flags(const Row& r)
{
  const int64_t gpus_per_node = r.system == "gb200-nvl72" ? 4 : 8;
  std::string f = "simulate --estimate --model " + r.model + " --cluster " + r.system + " --nodes " +
                  std::to_string(r.gpus / gpus_per_node) + " --tp " + std::to_string(r.tp) + " --pp " +
                  std::to_string(r.pp) + " --cp " + std::to_string(r.cp) + " --dp " + std::to_string(r.dp) +
                  " --micro-batch " + std::to_string(r.micro_batch) + " --global-batch " +
                  std::to_string(r.global_batch) + " --seq-len " + std::to_string(r.seq) +
                  " --sp --zero 1 --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap --grad-reduce-in-bf16"
                  " --cross-entropy-fusion --framework nemo --allow-oom --json";
  if (r.system == "gb200-nvl72" && r.model.rfind("nemotron4", 0) == 0)
    f += " --cuda-graphs";
  if (r.vp > 1)
    f += " --schedule interleaved --chunks " + std::to_string(r.vp);
  if (r.first_stage_layers > 0)
    f += " --pp-first-stage-layers " + std::to_string(r.first_stage_layers) + " --pp-last-stage-layers " +
         std::to_string(r.last_stage_layers);
  if (r.precision == "fp8")
    f += " --fp8";
  return f;
}

double error_of(const Row& r)
{
  const std::string arguments = flags(r);
  const traces::JsonValue report = cli_json_report(arguments);
  EXPECT_EQ(member(report, "framework").text, "nemo");
  EXPECT_EQ(member(member(report, "plan"), "attention").text, "flash");
  return number(report, "iteration_time_s") / r.measured_s - 1;
}

TEST(DgxcDenseValidation, GB200AndH100StepTimesOfNvidiasRecipes)
{
  const std::vector<Row> all = rows();
  ASSERT_EQ(all.size(), 24u);
  double sum = 0, fit_sum = 0;
  int fit_rows = 0;
  for (const Row& r : all) {
    SCOPED_TRACE(r.model + " " + r.system + " " + r.precision + " " + std::to_string(r.gpus) + " GPUs, global batch " +
                 std::to_string(r.global_batch));
    const double error = error_of(r);
    std::printf("%-15s %-12s %-4s %4lld GPUs gb %4lld: measured %7.3f s, error %+6.1f %%\n", r.model.c_str(),
                r.system.c_str(), r.precision.c_str(), static_cast<long long>(r.gpus),
                static_cast<long long>(r.global_batch), r.measured_s, 100 * error);
    EXPECT_LE(std::abs(error), 0.17);
    sum += std::abs(error);
    const bool gb200_bf16 = r.system == "gb200-nvl72" && r.precision == "bf16";
    if (gb200_bf16 && r.model == "nemotron4-340b") {
      fit_sum += std::abs(error);
      ++fit_rows;
    } else if (gb200_bf16) { // held out: another model on the fitted level
      EXPECT_LE(std::abs(error), 0.05);
    }
  }
  ASSERT_EQ(fit_rows, 6);
  const double fit_mape = fit_sum / fit_rows, mape = sum / static_cast<double>(all.size());
  std::printf("GB200 BF16 fit rows MAPE %.2f %%, all 24 rows MAPE %.2f %%\n", 100 * fit_mape, 100 * mape);
  EXPECT_LE(fit_mape, 0.03);
  EXPECT_LE(mape, 0.065);
}

} // namespace
} // namespace gputwin::testing
