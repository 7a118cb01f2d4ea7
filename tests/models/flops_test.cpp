// FLOPs, MFU and HFU against the paper's Table 5 and Appendix A.
#include "data/korthikanti2022.hpp"

#include "gputwin/models/flops.hpp"
#include "gputwin/models/model_catalog.hpp"

#include <gtest/gtest.h>

namespace gputwin {
namespace {

TEST(Flops, ClosedFormsOfAppendixA)
{
  const GptConfig& m = find_catalog_model("gpt3-175b")->model;
  const double B = 64, L = 96, s = 2048, h = 12288, v = 51200;
  EXPECT_DOUBLE_EQ(model_flops_per_iteration(m, 64), 72 * B * L * s * h * h * (1 + s / (6 * h) + v / (12 * h * L)));
  EXPECT_DOUBLE_EQ(hardware_flops_per_iteration(m, 64, Recompute::None), model_flops_per_iteration(m, 64));
  EXPECT_DOUBLE_EQ(hardware_flops_per_iteration(m, 64, Recompute::Selective),
                   72 * B * L * s * h * h * (1 + s / (3 * h) + v / (12 * h * L)));
  EXPECT_DOUBLE_EQ(hardware_flops_per_iteration(m, 64, Recompute::Full),
                   96 * B * L * s * h * h * (1 + s / (6 * h) + v / (16 * h * L)));
}

TEST(Flops, SelectiveRecomputeOverheadQuotedInThePaper)
{
  // Section 5: selective recompute costs 2.7% more FLOPs for GPT-3 and 1.6% for MT-NLG.
  for (const auto& [name, overhead] : {std::pair{"gpt3-175b", 0.027}, std::pair{"mt-nlg-530b", 0.016}}) {
    const GptConfig& m = find_catalog_model(name)->model;
    EXPECT_NEAR(hardware_flops_per_iteration(m, 1, Recompute::Selective) / model_flops_per_iteration(m, 1) - 1,
                overhead, 0.0005)
        << name;
  }
}

TEST(Flops, Table5MfuAndHfuFromTheMeasuredIterationTimes)
{
  // Bound: 0.3 percentage points. Selective recompute + SP runs, plans of Table 3, 312 TFLOP/s per A100.
  for (const auto& row : reference::table5) {
    SCOPED_TRACE(row.name);
    const CatalogEntry& e = *find_catalog_model(row.name);
    const int64_t batch = e.paper_plan.effective_global_batch();
    const double mfu = flops_utilization(model_flops_per_iteration(e.model, batch), row.selective_sp_seconds,
                                         e.paper_plan.gpus(), reference::a100_peak_bf16_flops);
    const double hfu =
        flops_utilization(hardware_flops_per_iteration(e.model, batch, Recompute::Selective), row.selective_sp_seconds,
                          e.paper_plan.gpus(), reference::a100_peak_bf16_flops);
    EXPECT_NEAR(100 * mfu, row.mfu_percent, 0.3);
    EXPECT_NEAR(100 * hfu, row.hfu_percent, 0.3);
  }
}

TEST(Flops, Table3PlansUseTheTable3GpuCountsAndBatches)
{
  for (const auto& row : reference::table3) {
    const CatalogEntry& e = *find_catalog_model(row.name);
    EXPECT_EQ(e.paper_plan.gpus(), row.gpus) << row.name;
    EXPECT_EQ(e.paper_plan.effective_global_batch(), row.global_batch) << row.name;
  }
}

TEST(Flops, UtilizationRejectsNonPositiveInputs)
{
  EXPECT_THROW(flops_utilization(1e15, 0.0, 8, 312e12), std::invalid_argument);
  EXPECT_THROW(flops_utilization(1e15, 1.0, 0, 312e12), std::invalid_argument);
}

} // namespace
} // namespace gputwin
