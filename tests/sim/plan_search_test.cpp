// The plan enumeration of `gputwin search`: every plan valid, fitting, and the fixed choices as documented.
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/sim/plan_search.hpp"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

namespace gputwin::sim {
namespace {

constexpr int64_t a100_80gb_bytes = 80'000'000'000;

TEST(PlanSearch, EveryCandidateIsValidFitsAndUsesTheCheapestRecompute)
{
  const GptConfig model = find_catalog_model("gpt3-175b")->model;
  const PlanEnumeration plans = enumerate_plans(model, 64, 64, 8, a100_80gb_bytes);
  ASSERT_FALSE(plans.fitting.empty());
  EXPECT_EQ(plans.shapes, static_cast<int64_t>(plans.fitting.size()) + plans.too_big);
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t, int, int64_t>> seen;
  for (const PlanCandidate& c : plans.fitting) {
    const ParallelPlan& p = c.plan;
    EXPECT_NO_THROW(validate_plan(model, p)) << describe_plan(p);
    EXPECT_EQ(p.gpus(), 64);
    EXPECT_EQ(p.effective_global_batch(), 64);
    EXPECT_LE(p.tp, 8) << "TP stays inside a node";
    EXPECT_EQ(p.sequence_parallel(), p.tp > 1);
    EXPECT_EQ(p.zero_stage, p.dp > 1 ? 1 : 0);
    EXPECT_EQ(c.peak_memory_bytes, busiest_stage_memory(model, p).total_bytes);
    EXPECT_LE(c.peak_memory_bytes, a100_80gb_bytes);
    // A cheaper recompute would not have fitted.
    if (p.recompute != Recompute::None) {
      ParallelPlan cheaper = p;
      cheaper.recompute = p.recompute == Recompute::Full ? Recompute::Selective : Recompute::None;
      EXPECT_GT(busiest_stage_memory(model, cheaper).total_bytes, a100_80gb_bytes) << describe_plan(p);
    }
    EXPECT_TRUE(seen.insert({p.tp, p.pp, p.dp, p.micro_batch, static_cast<int>(p.schedule), p.chunks}).second)
        << "each split once: " << describe_plan(p);
  }
  // The paper's 64-GPU-slot shape (tp 8, pp 8) is among them.
  bool paper_shape = false;
  for (const PlanCandidate& c : plans.fitting)
    paper_shape = paper_shape || (c.plan.tp == 8 && c.plan.pp == 8 && c.plan.micro_batch == 1 &&
                                  c.plan.schedule == Schedule::OneFOneB);
  EXPECT_TRUE(paper_shape);
}

TEST(PlanSearch, NothingFitsReportsTheSmallestPlan)
{
  const GptConfig model = find_catalog_model("gpt3-175b")->model;
  const PlanEnumeration plans = enumerate_plans(model, 8, 8, 8, a100_80gb_bytes);
  EXPECT_TRUE(plans.fitting.empty());
  EXPECT_EQ(plans.too_big, plans.shapes);
  EXPECT_GT(plans.smallest.peak_memory_bytes, a100_80gb_bytes);
  EXPECT_EQ(plans.smallest.plan.recompute, Recompute::Full);
}

} // namespace
} // namespace gputwin::sim
