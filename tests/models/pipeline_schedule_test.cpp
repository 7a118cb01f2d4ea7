// The one pipeline schedule, tested by the sequence it emits.
#include "gputwin/models/pipeline_schedule.hpp"

#include <gtest/gtest.h>

#include <set>

namespace gputwin {
namespace {

std::string order(Schedule schedule, int64_t stages, int64_t micro_batches, int64_t chunks, int64_t stage)
{
  return format_schedule(stage_schedule(PipelineShape{schedule, stages, micro_batches, chunks}, stage),
                         schedule == Schedule::Interleaved);
}

TEST(PipelineSchedule, GPipeRunsAllForwardsThenAllBackwards)
{
  EXPECT_EQ(order(Schedule::GPipe, 4, 3, 1, 0), "F0 F1 F2 B0 B1 B2");
  EXPECT_EQ(order(Schedule::GPipe, 4, 3, 1, 3), "F0 F1 F2 B0 B1 B2");
}

TEST(PipelineSchedule, OneFOneBWarmupSteadyCooldown)
{
  // Stage i: min(p - i - 1, m) warm-up forwards, then one forward / one backward, then the drain.
  EXPECT_EQ(order(Schedule::OneFOneB, 4, 8, 1, 0), "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  EXPECT_EQ(order(Schedule::OneFOneB, 4, 8, 1, 1), "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
  EXPECT_EQ(order(Schedule::OneFOneB, 4, 8, 1, 3), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  // Fewer micro-batches than the warm-up would take: all forwards, then all backwards.
  EXPECT_EQ(order(Schedule::OneFOneB, 4, 2, 1, 0), "F0 F1 B0 B1");
  EXPECT_EQ(order(Schedule::OneFOneB, 1, 3, 1, 0), "F0 B0 F1 B1 F2 B2");
}

TEST(PipelineSchedule, InterleavedWalksChunksInGroupsOfP)
{
  // p = 2, m = 4, v = 2. Stage 0 warm-up: 2 (p - 1) + (v - 1) p = 4 forwards.
  EXPECT_EQ(order(Schedule::Interleaved, 2, 4, 2, 0),
            "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
  // Last stage: warm-up (v - 1) p = 2, and its last chunk turns each micro-batch around at once.
  EXPECT_EQ(order(Schedule::Interleaved, 2, 4, 2, 1),
            "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
  // m == p: every forward first (Megatron-LM does the same).
  EXPECT_EQ(order(Schedule::Interleaved, 2, 2, 2, 1), "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0");
}

TEST(PipelineSchedule, EveryStepOnceAndBackwardAfterForward)
{
  for (const Schedule schedule : {Schedule::GPipe, Schedule::OneFOneB, Schedule::Interleaved})
    for (int64_t p = 1; p <= 5; ++p)
      for (int64_t m = 1; m <= 12; ++m)
        for (int64_t v = 1; v <= (schedule == Schedule::Interleaved ? 3 : 1); ++v) {
          if (schedule == Schedule::Interleaved && m % p != 0)
            continue;
          const PipelineShape shape{schedule, p, m, v};
          for (int64_t stage = 0; stage < p; ++stage) {
            SCOPED_TRACE(to_string(schedule) + " p=" + std::to_string(p) + " m=" + std::to_string(m) +
                         " v=" + std::to_string(v) + " stage=" + std::to_string(stage));
            const std::vector<PipelineStep> steps = stage_schedule(shape, stage);
            ASSERT_EQ(steps.size(), static_cast<size_t>(2 * m * v));
            std::set<std::pair<int64_t, int64_t>> forwarded, backwarded;
            for (const PipelineStep& s : steps) {
              const auto key = std::pair{s.micro_batch, s.chunk};
              ASSERT_LT(s.micro_batch, m);
              ASSERT_LT(s.chunk, v);
              if (s.phase == PipelinePhase::Forward) {
                ASSERT_TRUE(forwarded.insert(key).second) << "forward twice";
                // Chunks run forward in order for a micro-batch.
                if (s.chunk > 0) {
                  ASSERT_TRUE(forwarded.count({s.micro_batch, s.chunk - 1}));
                }
              } else {
                ASSERT_TRUE(forwarded.count(key)) << "backward before forward";
                ASSERT_TRUE(backwarded.insert(key).second) << "backward twice";
                if (s.chunk + 1 < v) {
                  ASSERT_TRUE(backwarded.count({s.micro_batch, s.chunk + 1}));
                }
              }
            }
            // The closed form used by the memory model equals the count along the emitted order.
            EXPECT_EQ(peak_in_flight(shape, stage), peak_in_flight(steps));
          }
        }
}

TEST(PipelineSchedule, PeakInFlightClosedForms)
{
  // 1F1B: stage i holds min(p - i, m); interleaved stage 0: 2(p-1) + (v-1)p + 1 = p v (1 + (p-1)/(p v)).
  EXPECT_EQ(peak_in_flight(PipelineShape{Schedule::OneFOneB, 8, 64, 1}, 0), 8);
  EXPECT_EQ(peak_in_flight(PipelineShape{Schedule::OneFOneB, 8, 64, 1}, 5), 3);
  EXPECT_EQ(peak_in_flight(PipelineShape{Schedule::Interleaved, 8, 64, 3}, 0), 31);
  EXPECT_EQ(peak_in_flight(PipelineShape{Schedule::GPipe, 8, 64, 1}, 0), 64);
}

// peak_equivalent_shape (walked by peak_weighted_in_flight): the same running peak as the whole schedule for any per-chunk weight (a chunk's layers,
// uneven; chunk 0 alone, as the embedding's dropout mask counts), on every stage, and a bounded walk.
TEST(PipelineSchedule, PeakEquivalentShapeReachesTheSamePeaksWithBoundedMicroBatches)
{
  const auto peak = [](const std::vector<PipelineStep>& steps, const std::vector<int64_t>& weight) {
    int64_t in_flight = 0, most = 0;
    for (const PipelineStep& s : steps) {
      const int64_t w = weight[static_cast<size_t>(s.chunk)];
      in_flight += s.phase == PipelinePhase::Forward ? w : -w;
      most = std::max(most, in_flight);
    }
    return most;
  };
  int shapes = 0;
  for (const Schedule schedule : {Schedule::GPipe, Schedule::OneFOneB, Schedule::Interleaved})
    for (int64_t p = 1; p <= 6; ++p)
      for (int64_t v = 1; v <= (schedule == Schedule::Interleaved ? 4 : 1); ++v)
        for (int64_t m = schedule == Schedule::Interleaved ? p : 1; m <= 9 * p; m += schedule == Schedule::Interleaved ? p : 1) {
          const PipelineShape whole{schedule, p, m, v};
          const PipelineShape short_shape = peak_equivalent_shape(whole);
          if (schedule != Schedule::GPipe) {
            EXPECT_LE(short_shape.micro_batches, schedule == Schedule::Interleaved ? 5 * p : p + 1);
          }
          for (int64_t stage = 0; stage < p; ++stage) {
            const std::vector<PipelineStep> full = stage_schedule(whole, stage);
            for (const std::vector<int64_t>& weights :
                 {std::vector<int64_t>{1, 1, 1, 1}, {3, 1, 2, 5}, {1, 0, 0, 0}, {0, 4, 1, 7}}) {
              const std::vector<int64_t> weight(weights.begin(), weights.begin() + v); // one per chunk
              // The library walks the short shape; the reference walks the whole schedule.
              EXPECT_EQ(peak_weighted_in_flight(whole, stage, weight), peak(full, weight))
                  << to_string(schedule) << " p " << p << " v " << v << " m " << m << " stage " << stage;
            }
          }
          ++shapes;
        }
  EXPECT_GT(shapes, 300);
  // GPipe's forwards all run first: no shorter shape has its peak.
  EXPECT_EQ(peak_equivalent_shape(PipelineShape{Schedule::GPipe, 4, 1000, 1}).micro_batches, 1000);
  EXPECT_EQ(peak_equivalent_shape(PipelineShape{Schedule::Interleaved, 8, 10000000, 3}).micro_batches, 40);
}

TEST(PipelineSchedule, RejectsImpossibleShapes)
{
  EXPECT_THROW(stage_schedule(PipelineShape{Schedule::OneFOneB, 0, 4, 1}, 0), std::invalid_argument);
  EXPECT_THROW(stage_schedule(PipelineShape{Schedule::OneFOneB, 2, 4, 1}, 2), std::invalid_argument);
  EXPECT_THROW(stage_schedule(PipelineShape{Schedule::Interleaved, 4, 6, 2}, 0), std::invalid_argument);
}

} // namespace
} // namespace gputwin
