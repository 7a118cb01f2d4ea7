// The memory check before a plan allocates: the memory model's bytes per rank summed over the ranks that share
// a device, against what the device has; an error names the device, the prediction and the limit.
#include "gputwin/engine/train/device_memory_check.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/model_catalog.hpp"

#include <gtest/gtest.h>

namespace gputwin::engine {
namespace {

TEST(DeviceMemoryCheck, SumsTheStagesOfTheRanksOnTheDevice)
{
  const CatalogEntry* entry = find_catalog_model("gpt3-175b");
  ASSERT_NE(entry, nullptr);
  const GptConfig& model = entry->model;
  ParallelPlan plan = entry->paper_plan; // t 8, p 8, b 1
  plan.recompute = Recompute::Selective;
  plan.tp_comm = TpComm::SequenceParallel;
  const RankGrid grid(plan.dp, plan.pp, plan.tp);
  // Rank 0 is on stage 0, the busiest stage of 1F1B (p micro-batches in flight).
  const int64_t stage0 = stage_memory(model, plan, 0).total_bytes;
  EXPECT_EQ(predicted_rank_bytes(model, plan, grid, 0), stage0);
  EXPECT_EQ(predicted_rank_bytes(model, plan, grid, 7), stage0) << "tp ranks of one stage hold the same";
  const int last = grid.world_size() - 1;
  EXPECT_EQ(predicted_rank_bytes(model, plan, grid, last), stage_memory(model, plan, 7).total_bytes);

  EXPECT_NO_THROW(check_plan_fits(model, plan, grid, {0}, stage0, "GPU 0", "free on the GPU"));
  try {
    check_plan_fits(model, plan, grid, {0, last}, stage0, "GPU 0 (NVIDIA H100 80GB HBM3)", "free on the GPU");
    FAIL() << "two ranks in the bytes of one";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("does not fit on GPU 0 (NVIDIA H100 80GB HBM3)"), std::string::npos) << what;
    EXPECT_NE(what.find("2 rank(s)"), std::string::npos) << what;
    EXPECT_NE(what.find("stage 7"), std::string::npos) << what;
    EXPECT_NE(what.find("free on the GPU"), std::string::npos) << what;
  }
}

} // namespace
} // namespace gputwin::engine
