// Activation memory the engine's allocator saw, against Korthikanti et al. 2022: the bytes one layer keeps
// for backward equal Table 2 exactly for all six rows (written out here from the paper, independently of
// models/), and the first pipeline stage's peak follows the schedule's in-flight count.
#include "engine_test_support.hpp"

#include "gputwin/models/activation_memory.hpp"
#include "gputwin/models/pipeline_schedule.hpp"

#include <gtest/gtest.h>

namespace gputwin::engine::testing {
namespace {

struct Table2Row {
  const char* name;
  PlanSpec plan;
  int64_t (*bytes)(int64_t s, int64_t b, int64_t h, int64_t a, int64_t t); // the paper's formula
};

// Table 2, multiplied out so every term is an integer for h, a divisible by t.
const Table2Row table2[] = {
    {"no parallelism", PlanSpec{.tp = 1},
     [](int64_t s, int64_t b, int64_t h, int64_t a, int64_t) { return s * b * h * 34 + 5 * a * s * s * b; }},
    {"tensor parallel", PlanSpec{.tp = 2},
     [](int64_t s, int64_t b, int64_t h, int64_t a, int64_t t) {
       return s * b * h * 10 + s * b * h * 24 / t + 5 * a * s * s * b / t;
     }},
    {"tensor + sequence parallel", PlanSpec{.tp = 2, .sp = true},
     [](int64_t s, int64_t b, int64_t h, int64_t a, int64_t t) { return s * b * h * 34 / t + 5 * a * s * s * b / t; }},
    {"tensor parallel + selective recompute", PlanSpec{.tp = 2, .recompute = Recompute::Selective},
     [](int64_t s, int64_t b, int64_t h, int64_t, int64_t t) { return s * b * h * 10 + s * b * h * 24 / t; }},
    {"tensor + sequence parallel + selective recompute",
     PlanSpec{.tp = 2, .sp = true, .recompute = Recompute::Selective},
     [](int64_t s, int64_t b, int64_t h, int64_t, int64_t t) { return s * b * h * 34 / t; }},
    {"full activation recompute", PlanSpec{.tp = 2, .recompute = Recompute::Full},
     [](int64_t s, int64_t b, int64_t h, int64_t, int64_t) { return 2 * s * b * h; }},
    // With SP the stored layer input is the sequence shard (as models/ counts it).
    {"full activation recompute + SP", PlanSpec{.tp = 2, .sp = true, .recompute = Recompute::Full},
     [](int64_t s, int64_t b, int64_t h, int64_t, int64_t t) { return 2 * s * b * h / t; }},
    {"tensor parallel 4 + SP, micro-batch 2", PlanSpec{.tp = 4, .sp = true, .micro_batch = 2, .global_batch = 4},
     [](int64_t s, int64_t b, int64_t h, int64_t a, int64_t t) { return s * b * h * 34 / t + 5 * a * s * s * b / t; }},
};

TEST(EngineMemory, SavedBytesPerLayerEqualTable2)
{
  const GptConfig m = tiny_model();
  for (const Table2Row& row : table2) {
    const TrainResult r = run_tiny(row.plan, 1, false);
    const int64_t expected = row.bytes(m.seq_len, row.plan.micro_batch, m.hidden, m.heads, row.plan.tp);
    EXPECT_EQ(expected, activation_bytes_per_layer(m, make_plan(row.plan))) << row.name << ": models/ disagrees";
    for (const RankMemory& rank : r.memory) {
      EXPECT_EQ(rank.saved_bytes_per_layer_min, expected) << row.name << ", rank " << rank.rank;
      EXPECT_EQ(rank.saved_bytes_per_layer_max, expected) << row.name << ", rank " << rank.rank;
    }
  }
}

// With --attention flash the attention core keeps no s x s tensor: Table 2's 5 a s^2 b becomes the fp32
// log-sum-exp per (sample, head, query), 4 a s b / t, and the 16-byte dropout RNG state (FlashAttention's
// (seed, offset)); selective recompute keeps the same (nothing is left to recompute); full recompute keeps
// the layer input. Written out here independently of models/ (docs: models/activation_memory.hpp).
const Table2Row flash_rows[] = {
    {"flash, no parallelism", PlanSpec{.tp = 1},
     [](int64_t s, int64_t b, int64_t h, int64_t a, int64_t) { return s * b * h * 34 + 4 * a * s * b + 16; }},
    {"flash, tensor parallel", PlanSpec{.tp = 2},
     [](int64_t s, int64_t b, int64_t h, int64_t a, int64_t t) {
       return s * b * h * 10 + s * b * h * 24 / t + 4 * a * s * b / t + 16;
     }},
    {"flash, tensor + sequence parallel", PlanSpec{.tp = 2, .sp = true},
     [](int64_t s, int64_t b, int64_t h, int64_t a, int64_t t) { return s * b * h * 34 / t + 4 * a * s * b / t + 16; }},
    {"flash, tensor parallel + selective recompute", PlanSpec{.tp = 2, .recompute = Recompute::Selective},
     [](int64_t s, int64_t b, int64_t h, int64_t a, int64_t t) {
       return s * b * h * 10 + s * b * h * 24 / t + 4 * a * s * b / t + 16;
     }},
    {"flash, tensor + sequence parallel + selective recompute",
     PlanSpec{.tp = 2, .sp = true, .recompute = Recompute::Selective},
     [](int64_t s, int64_t b, int64_t h, int64_t a, int64_t t) { return s * b * h * 34 / t + 4 * a * s * b / t + 16; }},
    {"flash, full activation recompute + SP", PlanSpec{.tp = 2, .sp = true, .recompute = Recompute::Full},
     [](int64_t s, int64_t b, int64_t h, int64_t, int64_t t) { return 2 * s * b * h / t; }},
    {"flash, tensor parallel 4 + SP, micro-batch 2", PlanSpec{.tp = 4, .sp = true, .micro_batch = 2, .global_batch = 4},
     [](int64_t s, int64_t b, int64_t h, int64_t a, int64_t t) { return s * b * h * 34 / t + 4 * a * s * b / t + 16; }},
};

// models/ counts flash as Megatron-Core + Transformer Engine keep it, whose LayerNormLinear modules also save each
// of the two norms' fp32 mu and rsigma per token (2 x 8 s b, split by t with SP); the engine keeps no statistics.
int64_t te_norm_statistics(const GptConfig& m, const ParallelPlan& plan)
{
  if (plan.recompute == Recompute::Full)
    return 0;
  return 2 * 8 * m.seq_len * plan.micro_batch / (plan.sequence_parallel() ? plan.tp : 1);
}

TEST(EngineMemory, FlashAttentionSavedBytesPerLayerEqualTheFlashFormula)
{
  const GptConfig m = tiny_model();
  for (Table2Row row : flash_rows) {
    row.plan.attention = AttentionKernel::Flash;
    const TrainResult r = run_tiny(row.plan, 1, false);
    const int64_t expected = row.bytes(m.seq_len, row.plan.micro_batch, m.hidden, m.heads, row.plan.tp);
    EXPECT_EQ(expected + te_norm_statistics(m, make_plan(row.plan)), activation_bytes_per_layer(m, make_plan(row.plan)))
        << row.name << ": models/ disagrees";
    for (const RankMemory& rank : r.memory) {
      EXPECT_EQ(rank.saved_bytes_per_layer_min, expected) << row.name << ", rank " << rank.rank;
      EXPECT_EQ(rank.saved_bytes_per_layer_max, expected) << row.name << ", rank " << rank.rank;
    }
  }
  // And the first stage's peak with a pipeline: the flash bytes x the schedule's in-flight count.
  const PlanSpec spec{.tp = 2, .pp = 2, .sp = true, .recompute = Recompute::Selective, .global_batch = 8,
                      .attention = AttentionKernel::Flash};
  const ParallelPlan plan = make_plan(spec);
  const TrainResult r = run_tiny(spec, 1, false);
  const StageActivations a = stage_activation_memory(m, plan, 0);
  EXPECT_EQ(r.memory[0].peak_bytes[static_cast<size_t>(MemoryPurpose::LayerActivations)],
            (a.bytes_per_layer - te_norm_statistics(m, plan)) * a.layers_per_chunk * a.chunks_in_flight);
}

TEST(EngineMemory, FirstStagePeakFollowsTheSchedule)
{
  const GptConfig m = tiny_model();
  const PlanSpec plans[] = {
      PlanSpec{.pp = 2, .sp = false, .schedule = Schedule::OneFOneB, .global_batch = 4},    // p = 2 in flight
      PlanSpec{.pp = 4, .schedule = Schedule::OneFOneB, .global_batch = 8},                 // p = 4 of m = 8
      PlanSpec{.pp = 4, .schedule = Schedule::GPipe, .global_batch = 8},                    // all m = 8
      PlanSpec{.pp = 2, .schedule = Schedule::Interleaved, .chunks = 2, .global_batch = 4}, // m v = 4 (m == p)
      PlanSpec{.pp = 2, .schedule = Schedule::Interleaved, .chunks = 2, .global_batch = 8}, // 2(p-1)+(v-1)p+1 = 5
      PlanSpec{.tp = 2, .pp = 2, .sp = true, .recompute = Recompute::Selective, .global_batch = 8},
  };
  for (const PlanSpec& spec : plans) {
    const ParallelPlan plan = make_plan(spec);
    const TrainResult r = run_tiny(spec, 1, false);
    const PipelineShape shape = pipeline_shape(plan);
    const int64_t layers_per_chunk = m.layers / (plan.pp * shape.chunks);
    const int64_t in_flight = peak_in_flight(shape, 0);
    const int64_t expected = activation_bytes_per_layer(m, plan) * layers_per_chunk * in_flight;
    EXPECT_EQ(r.memory[0].peak_bytes[static_cast<size_t>(MemoryPurpose::LayerActivations)], expected)
        << describe(spec) << ": " << in_flight << " (micro-batch, chunk) pairs in flight";
    EXPECT_EQ(stage_activation_memory(m, plan, 0).layer_bytes, expected) << describe(spec);
  }
}

TEST(EngineMemory, ModelStateIsEighteenBytesPerParameter)
{
  // bf16 weights 2, fp32 gradients 4, fp32 master + Adam moments 12 (Section 5 of the primer).
  const TrainResult r = run_tiny(PlanSpec{}, 1, false);
  const RankMemory& m = r.memory[0];
  const int64_t weights = m.peak_bytes[static_cast<size_t>(MemoryPurpose::Weights)];
  EXPECT_EQ(m.peak_bytes[static_cast<size_t>(MemoryPurpose::Gradients)], 2 * weights);
  EXPECT_EQ(m.peak_bytes[static_cast<size_t>(MemoryPurpose::Optimizer)], 6 * weights);
}

} // namespace
} // namespace gputwin::engine::testing
