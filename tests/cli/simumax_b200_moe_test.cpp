// Validation of mixture of experts against measured iterations: the 12 DeepSeek rows of SimuMax's B200 release table
// (tests/data/simumax-b200-one-node/moe_measurements.csv; MooreThreads/SimuMax docs/b200/b200_release_v1.2_summary.md
// at commit 1b8ca90, Apache-2.0): DeepSeek-V2 and DeepSeek-V3 cut to 4 layers (the first dense), one DGX B200 node,
// tp 1, EP 8 x DP 8 or EP 4 x PP 2 x DP 4, 4/8/32 micro-batches of one 4096-token sample, BF16, distributed
// optimizer, flash attention, alltoall dispatcher with grouped GEMM and permute fusion, no recompute
// (simu_tools/megatron_scripts/scripts/run_pretrain_deepseekv2.sh; SimuMax's configs/models/deepseekv3.json has no
// MTP module, hence --mtp-layers 0). Each row runs as a user would:
//   gputwin simulate --model deepseek-v2|deepseek-v3 --layers 4 --moe-dense-first-layers 1 [--mtp-layers 0]
//     --seq-len 4096 --cluster dgx-b200 --nodes 1 --tp 1 --pp P --dp D --ep E --micro-batch 1
//     --global-batch D x micro-batches --zero 1 --cross-entropy-fusion --json
// Nothing was fitted to these rows (the B200's one constant comes from the dense Llama rows).
//
// Measured (2026-11-27; time 2026-11-29), balanced routing (the default):
//   peak memory: every row within 0.5 % (DeepSeek-V2 +0.3/+0.4 %, V3 +0.3/+0.5 %); the bound is 3 % each.
//   iteration time: MAPE 9.9 %, every row 8-14 % fast (SimuMax's own model: 6.6 %); the target, 10 %, met by
//   a hair. History (2026-11-29): 11.0 % before MLA's projections were Megatron-Core's four GEMMs instead of one
//   h-deep GEMM of their FLOPs; 12.4 % before Megatron's gradient passes (grad buffer zeroed, NaN-check norm and 1/dp
//   scaling before the reduction, gradient clipping: 26-50 ms of each row's fixed cost, the experts' grad buffers
//   being unsharded at edp 1) and the B200 refit that followed; 15.5 % before each expert's GEMM kernel paid its
//   fixed cost; 14.6 % with H100's GEMM table. Known missing costs: the launch runs Megatron's real router (softmax
//   with group-limited routing, seq aux loss), not forced balance, so EP ranks wait for the busiest one
//   (--moe-imbalance models that, but the runs' imbalance was not published); the token-count all-gather before each
//   dispatch is not emitted.
// Bounds: memory within 3 % each and time MAPE <= 10 % (the issue's); each row within 15 % (a guard above today's).
#include "csv_cells.hpp"
#include "simumax_b200_rows.hpp"
#include "json_report.hpp"
#include "run_cli.hpp"

#include "gputwin/traces/json_value.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

namespace gputwin::testing {
namespace {

// The row's simulate report (its run must succeed).
traces::JsonValue simulate_row(const SimuMaxRow& r)
{
  const CliResult run = run_gputwin(simumax_flags(r), false);
  EXPECT_EQ(run.exit_code, 0) << simumax_flags(r);
  return traces::parse_json(run.output);
}

TEST(SimuMaxB200Moe, DeepSeekRowsPeakMemoryWithinThreePercentAndTimeGuarded)
{
  double sum_abs = 0, simumax_sum_abs = 0;
  int n = 0;
  for (const SimuMaxRow& r : simumax_rows("moe_measurements.csv")) {
    SCOPED_TRACE(r.name);
    const traces::JsonValue report = simulate_row(r);
    const double ms = 1e3 * number(report, "iteration_time_s");
    const double gib = number(report, "peak_memory_bytes") / (1024.0 * 1024 * 1024);
    const double error = ms / r.measured_ms - 1, memory_error = gib / r.measured_gib - 1;
    std::cout << r.name << ": " << ms << " ms (measured " << r.measured_ms << ", " << 100 * error << " %), " << gib
              << " GiB (measured " << r.measured_gib << ", " << 100 * memory_error << " %)\n";
    EXPECT_LE(std::abs(memory_error), 0.03);
    EXPECT_LE(std::abs(error), 0.15);
    EXPECT_GT(number(member(report, "moe"), "exchange_s"), 0) << "EP all-to-alls on the node's NVLink";
    sum_abs += std::abs(error);
    simumax_sum_abs += std::abs(r.simumax_ms / r.measured_ms - 1);
    ++n;
  }
  ASSERT_EQ(n, 12);
  std::cout << "MoE rows: MAPE " << 100 * sum_abs / n << " % (SimuMax's own model: " << 100 * simumax_sum_abs / n
            << " %)\n";
  RecordProperty("mape_percent", std::to_string(100 * sum_abs / n));
  EXPECT_LE(sum_abs / n, 0.10);
}

// Issue 28's check on all 43 rows, dense and MoE: iteration time MAPE <= 8 % and below SimuMax's own model on the
// same rows (5.62 %). Measured (2026-11-29): 5.15 % (dense 3.31 % over 31, MoE 9.89 % over 12); 5.8 % before the
// gradient passes and MLA's four projection GEMMs.
TEST(SimuMaxB200, AllFortyThreeRowsBeatSimuMaxsOwnModel)
{
  double sum_abs = 0, simumax_sum_abs = 0;
  int n = 0;
  for (const char* file : {"measurements.csv", "moe_measurements.csv"})
    for (const SimuMaxRow& r : simumax_rows(file)) {
      SCOPED_TRACE(r.name);
      sum_abs += std::abs(1e3 * number(simulate_row(r), "iteration_time_s") / r.measured_ms - 1);
      simumax_sum_abs += std::abs(r.simumax_ms / r.measured_ms - 1);
      ++n;
    }
  ASSERT_EQ(n, 43);
  std::cout << "all rows: MAPE " << 100 * sum_abs / n << " % (SimuMax's own model: " << 100 * simumax_sum_abs / n
            << " %)\n";
  RecordProperty("mape_percent", std::to_string(100 * sum_abs / n));
  EXPECT_LE(sum_abs / n, 0.08);
  EXPECT_LT(sum_abs / n, simumax_sum_abs / n);
}

} // namespace
} // namespace gputwin::testing
