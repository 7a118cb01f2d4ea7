// Validation against measured production runs of today's stack: NeMo + Transformer Engine training
// Nemotron-4 15B and 340B on DGX H100, BF16 and FP8, 16-2048 GPUs (tests/data/nemotron4-h100-dgxc/, NVIDIA
// dgxc-benchmarking v25.02.01, Apache-2.0). Every row is simulated as a user would: the catalogue model, the
// recipe's plan and overlaps, the built-in H100 compute model and the cluster's default framework
// (megatron-core) -- nothing fitted to these rows. The fast estimate times the 26 rows (it agrees with the full
// simulation to 0.1% on these plans: FullSimulationAgreesWithTheEstimate).
//
// Bounds: the target, met on 2026-11-29 -- MAPE 6.77 % <= 8 %, every row within 15 % (worst -11.2 %, a 15B
// BF16 row). 7.56 % before Hopper's FP8 gradient GEMMs paid the split accumulator (GpuComputeModel::
// fp8_split_accumulator_slowdown); 8.54 % before the 340B rows ran their own recipe (no TP overlap, batched
// host-synchronised p2p, BF16 gradient reduction); 10.23 % before Megatron's gradient passes. The simulated 15B runs
// stay 6-11 % faster than measured (README "Validation", the per-row table).
#include "csv_cells.hpp"
#include "json_report.hpp"
#include "run_cli.hpp"

#include "gputwin/traces/json_value.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gputwin::testing {
namespace {

struct Row {
  std::string model, precision;
  int64_t gpus = 0, global_batch = 0, micro_batch = 0, tp = 0, pp = 0, vp = 0, cp = 0, seq = 0;
  double measured_s = 0;
};

std::vector<Row> rows()
{
  // model,precision,gpus,global_batch,micro_batch,grad_accum,tp,pp,vp,cp,seq_len,step_time_s
  std::vector<Row> out;
  for (const std::vector<std::string>& f : csv_data_rows(GPUTWIN_TEST_DATA_DIR "/nemotron4-h100-dgxc/step_times.csv", 12)) {
    Row r;
    r.model = f[0];
    r.precision = f[1];
    r.gpus = std::stoll(f[2]);
    r.global_batch = std::stoll(f[3]);
    r.micro_batch = std::stoll(f[4]);
    r.tp = std::stoll(f[6]);
    r.pp = std::stoll(f[7]);
    r.vp = std::stoll(f[8]);
    r.cp = std::stoll(f[9]);
    r.seq = std::stoll(f[10]);
    r.measured_s = std::stod(f[11]);
    out.push_back(r);
  }
  return out;
}

// The recipe as `gputwin simulate` flags: flash attention and megatron-core come from dgx-h100's defaults. The
// recipes (dgxc-benchmarking 5f23b67, nemotron/nemotron4-{15b,340b}-synth.yaml): both run sequence parallelism, the
// distributed optimizer with overlapped gradient reduce-scatter and parameter all-gather; 15B runs TE's userbuffers
// TP overlap (ub_tp_comm_overlap: True), 340B does not (ub_tp_comm_overlap: False), runs its interleaved schedule
// with batched, host-synchronised p2p (overlap_p2p_comm: False, batch_p2p_comm: True) and reduces gradients in BF16
// (distributed_fused_adam with grad_sync_dtype: bf16; 15B's mcore_distributed_optim keeps FP32).
std::string flags(const Row& r)
{
  const int64_t dp = r.gpus / (r.tp * r.pp * r.cp);
  std::string f = "simulate --model " + r.model + " --cluster dgx-h100 --tp " + std::to_string(r.tp) + " --pp " +
                  std::to_string(r.pp) + " --dp " + std::to_string(dp) + " --micro-batch " +
                  std::to_string(r.micro_batch) + " --global-batch " + std::to_string(r.global_batch) +
                  " --seq-len " + std::to_string(r.seq) +
                  " --sp --zero 1 --overlap-grad-reduce --overlap-param-gather --allow-oom --json";
  f += r.model == "nemotron4-340b" ? " --no-overlap-p2p-comm --grad-reduce-in-bf16" : " --tp-comm-overlap";
  if (r.vp > 1)
    f += " --schedule interleaved --chunks " + std::to_string(r.vp);
  if (r.precision == "fp8")
    f += " --fp8";
  return f;
}

double simulated_s(const std::string& arguments)
{
  const traces::JsonValue report = cli_json_report(arguments);
  EXPECT_EQ(member(report, "framework").text, "megatron-core");
  EXPECT_EQ(member(member(report, "plan"), "attention").text, "flash");
  return number(report, "iteration_time_s");
}

TEST(NemotronValidation, TwentySixMeasuredH100RunsWithTheDefaultFramework)
{
  const std::vector<Row> all = rows();
  ASSERT_EQ(all.size(), 26u);
  double sum = 0;
  for (const Row& r : all) {
    SCOPED_TRACE(r.model + " " + r.precision + " " + std::to_string(r.gpus) + " GPUs");
    const double error = simulated_s(flags(r) + " --estimate") / r.measured_s - 1;
    std::printf("%-15s %-4s %4lld GPUs: measured %6.3f s, error %+6.1f %%\n", r.model.c_str(), r.precision.c_str(),
                static_cast<long long>(r.gpus), r.measured_s, 100 * error);
    EXPECT_LE(std::abs(error), 0.15);
    sum += std::abs(error);
  }
  std::printf("MAPE %.2f %%\n", 100 * sum / static_cast<double>(all.size()));
  EXPECT_LE(sum / static_cast<double>(all.size()), 0.08);
}

TEST(NemotronValidation, FullSimulationAgreesWithTheEstimate)
{
  const Row r = rows().at(0); // 15B BF16 on 16 GPUs
  const double full = simulated_s(flags(r));
  const double estimate = simulated_s(flags(r) + " --estimate");
  EXPECT_NEAR(full / estimate, 1.0, 0.01);
}

} // namespace
} // namespace gputwin::testing
