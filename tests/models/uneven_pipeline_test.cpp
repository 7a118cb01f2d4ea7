// Uneven first/last pipeline stages (Megatron-Core --decoder-first/last-pipeline-num-layers), alone and with
// the interleaved schedule's virtual stages: the layer assignment against Megatron-Core's own offsets, Meta's
// Llama 3 405B plan, the plan's refusals, and the generated programs over every split the plan accepts.
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/pipeline_schedule.hpp"
#include "gputwin/models/workload.hpp"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace gputwin {
namespace {

GptConfig model_with_layers(int64_t layers)
{
  GptConfig m{"uneven", 256, 8, layers, 128, 1024};
  m.dropout = false;
  return m;
}

ParallelPlan uneven_plan(int64_t pp, int64_t first, int64_t last, int64_t chunks)
{
  ParallelPlan p;
  p.tp = 2;
  p.pp = pp;
  p.tp_comm = TpComm::SequenceParallel;
  p.pp_first_stage_layers = first;
  p.pp_last_stage_layers = last;
  p.schedule = chunks > 1 ? Schedule::Interleaved : Schedule::OneFOneB;
  p.chunks = chunks;
  p.global_batch = 2 * pp; // micro-batch 1, dp 1: 2 pp micro-batches
  return p;
}

bool accepted(const GptConfig& m, const ParallelPlan& p)
{
  try {
    validate_plan(m, p);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

// Megatron-Core's get_transformer_layer_offset (megatron/core/transformer/transformer_layer.py, uneven branch)
// for a plan it accepts: the first layer of (pp_rank, vp_stage); vp_size = 0 without virtual stages.
int64_t megatron_layer_offset(int64_t num_layers, int64_t pp, int64_t first, int64_t last, int64_t vp_size,
                              int64_t pp_rank, int64_t vp_stage)
{
  const int64_t middle_stages = pp - (first > 0) - (last > 0);
  const int64_t middle_layers = num_layers - first - last;
  const int64_t middle_rank = first > 0 ? pp_rank - 1 : pp_rank;
  if (vp_size > 0) {
    const int64_t first_chunk = first / vp_size, last_chunk = last / vp_size, middle_chunk = middle_layers / vp_size;
    const int64_t total_virtual_chunks = first_chunk + middle_chunk + last_chunk;
    if (pp_rank == 0)
      return vp_stage * total_virtual_chunks;
    // (No middle stage: Megatron-Core divides 0 by 0 here; the last stage starts right after the first.)
    return vp_stage * total_virtual_chunks + first_chunk +
           (middle_stages > 0 ? middle_rank * (middle_chunk / middle_stages) : 0);
  }
  if (pp_rank == 0)
    return 0;
  return middle_rank * (middle_stages > 0 ? middle_layers / middle_stages : 0) + first;
}

TEST(UnevenPipeline, LayerOffsetsAreMegatronCores)
{
  int checked = 0;
  for (const int64_t layers : {12, 24, 30, 32}) {
    const GptConfig m = model_with_layers(layers);
    for (const int64_t pp : {2, 3, 4, 6})
      for (const int64_t chunks : {1, 2, 3})
        for (int64_t first = 0; first <= layers; ++first)
          for (int64_t last = 0; last <= layers; ++last) {
            if (first == 0 && last == 0)
              continue;
            // Megatron-Core's own conditions: first and last divisible by the virtual stages.
            if (chunks > 1 && (first % chunks != 0 || last % chunks != 0))
              continue;
            const ParallelPlan p = uneven_plan(pp, first, last, chunks);
            if (!accepted(m, p))
              continue;
            for (int64_t stage = 0; stage < pp; ++stage)
              for (int64_t chunk = 0; chunk < chunks; ++chunk) {
                ASSERT_EQ(chunk_first_layer(m, p, stage, chunk),
                          megatron_layer_offset(layers, pp, first, last, chunks > 1 ? chunks : 0, stage, chunk))
                    << "L " << layers << " pp " << pp << " chunks " << chunks << " first " << first << " last "
                    << last << " stage " << stage << " chunk " << chunk;
                ++checked;
              }
          }
  }
  EXPECT_GT(checked, 1000);
}

// Meta's Llama 3 405B plan (Grattafiori et al. 2024, Section 3.3.2): 126 layers on 16 stages with the first and
// last one layer lighter, interleaved over 2 virtual stages. 7 does not divide by 2 (Megatron-Core refuses it):
// the first stage's chunk 0 (with the embedding) and the last stage's chunk 1 (with the output layer) hold 3.
TEST(UnevenPipeline, MetasLlama405BPlanInterleaved)
{
  const GptConfig& m = find_catalog_model("llama3-405b")->model;
  ParallelPlan p = uneven_plan(16, 7, 7, 2);
  p.tp = 8;
  p.global_batch = 32;
  validate_plan(m, p);
  EXPECT_EQ(chunk_layers(m, p, 0, 0), 3);
  EXPECT_EQ(chunk_layers(m, p, 0, 1), 4);
  EXPECT_EQ(chunk_layers(m, p, 15, 0), 4);
  EXPECT_EQ(chunk_layers(m, p, 15, 1), 3);
  for (int64_t stage = 1; stage < 15; ++stage)
    for (int64_t chunk = 0; chunk < 2; ++chunk)
      EXPECT_EQ(chunk_layers(m, p, stage, chunk), 4) << stage;
  // The virtual stages hold the layers in order: 0-2 on (0, 0), 3-6 on (1, 0), ..., 59-62 on (15, 0), 63-66 on
  // (0, 1), ..., 123-125 on (15, 1).
  EXPECT_EQ(chunk_first_layer(m, p, 1, 0), 3);
  EXPECT_EQ(chunk_first_layer(m, p, 15, 0), 59);
  EXPECT_EQ(chunk_first_layer(m, p, 0, 1), 63);
  EXPECT_EQ(chunk_first_layer(m, p, 15, 1), 123);
  EXPECT_EQ(stage_first_layer(m, p, 1), 3);
  // Stage 0's in-flight layers: 47 (micro-batch, chunk) pairs at its peak, fewer than 47 x 4 layers since its
  // chunk 0 holds 3: the first 16 forwards of chunk 0, 16 of chunk 1, 15 of chunk 0 = 16 x 3 + 16 x 4 + 15 x 3.
  EXPECT_EQ(peak_in_flight(pipeline_shape(p), 0), 47);
  EXPECT_EQ(peak_layers_in_flight(m, p, 0), 16 * 3 + 16 * 4 + 15 * 3);
  EXPECT_EQ(peak_layers_in_flight(m, p, 1), 4 * peak_in_flight(pipeline_shape(p), 1));
}

TEST(UnevenPipeline, InterleavedRefusalsNameTheFlag)
{
  const GptConfig m = model_with_layers(32);
  auto expect_error = [&](const ParallelPlan& p, const std::string& flag) {
    try {
      validate_plan(m, p);
      ADD_FAILURE() << "expected an InputError naming " << flag;
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind(flag + ":", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  };
  expect_error(uneven_plan(4, 6, 6, 4), "--chunks");                // 10 per middle stage over 4 chunks
  // 2 layers cannot fill 4 chunks even with the embedding's chunk empty (3 needed); the loss's likewise.
  expect_error(uneven_plan(4, 2, 6, 4), "--pp-first-stage-layers");
  expect_error(uneven_plan(4, 6, 2, 4), "--pp-last-stage-layers");
  validate_plan(m, uneven_plan(4, 6, 6, 2)); // 6 + 2 x 10 + 6
  validate_plan(m, uneven_plan(4, 7, 5, 2)); // 7 = 3 + 4, 10, 10, 5 = 3 + 2
  // Megatron-Core's "E|t|t|t|..." layouts: the pipeline's first chunk holds only the embedding, its last only the
  // output layer and the loss: 3 = 0 + 1 + 1 + 1 on stage 0, 12 = 3 x 4 in the middle, 5 = 2 + 1 + 1 + 1.
  const ParallelPlan layout = uneven_plan(4, 3, 5, 4);
  validate_plan(m, layout);
  EXPECT_EQ(chunk_layers(m, layout, 0, 0), 0);
  EXPECT_EQ(chunk_layers(m, layout, 0, 1), 1);
  const ParallelPlan loss_alone = uneven_plan(4, 5, 3, 4);
  validate_plan(m, loss_alone);
  EXPECT_EQ(chunk_layers(m, loss_alone, 3, 3), 0);
  EXPECT_EQ(chunk_layers(m, loss_alone, 3, 0), 1);
}

// Every split the plan accepts, with SP, 1F1B and interleaved (the embedding's or the loss's chunk empty included):
// each stage's program holds its chunk_layers in its order, every layer runs once forward and once backward per micro-batch over the pipeline, no communication
// carries negative or non-finite bytes, and every pipeline send has its receive.
TEST(UnevenPipeline, EverySplitGeneratesAConsistentWorkload)
{
  int plans = 0;
  for (const int64_t layers : {10, 16}) {
    const GptConfig m = model_with_layers(layers);
    for (const int64_t pp : {2, 3, 4})
      for (const int64_t chunks : {1, 2})
        for (int64_t first = 0; first <= layers; ++first)
          for (int64_t last = 0; last <= layers; ++last) {
            if (first == 0 && last == 0)
              continue;
            const ParallelPlan p = uneven_plan(pp, first, last, chunks);
            if (!accepted(m, p))
              continue;
            ++plans;
            const std::string label = "L " + std::to_string(layers) + " pp " + std::to_string(pp) + " chunks " +
                                      std::to_string(chunks) + " first " + std::to_string(first) + " last " +
                                      std::to_string(last);
            const Workload w = make_workload(m, p);
            std::map<int32_t, int> forwards; // layer -> qkv.fwd count over the pipeline
            std::map<std::tuple<int32_t, int32_t, int64_t>, int> sends, recvs; // (from, to, sequence)
            for (int64_t stage = 0; stage < pp; ++stage) {
              int64_t stage_total = 0;
              for (int64_t c = 0; c < stage_chunks(p); ++c) {
                // Only the embedding's chunk (the pipeline's first) and the loss's (its last) may be empty.
                const bool end_chunk = (stage == 0 && c == 0) || (stage == pp - 1 && c == stage_chunks(p) - 1);
                ASSERT_GE(chunk_layers(m, p, stage, c), end_chunk && stage_chunks(p) > 1 ? 0 : 1) << label;
                stage_total += chunk_layers(m, p, stage, c);
              }
              ASSERT_EQ(stage_total, stage_layers(m, p, stage)) << label;
              const traces::RankProgram prog = stage_program(w, stage);
              for (const traces::Op& op : prog.ops) {
                if (op.kind != traces::OpKind::Compute) {
                  ASSERT_TRUE(op.bytes >= 0) << label << " " << op.name;
                }
                if (op.name == "qkv.fwd" && op.phase == traces::Phase::Forward) {
                  ++forwards[op.layer];
                  const int64_t first_of_chunk = chunk_first_layer(m, p, stage, op.chunk);
                  ASSERT_GE(op.layer, first_of_chunk) << label;
                  ASSERT_LT(op.layer, first_of_chunk + chunk_layers(m, p, stage, op.chunk)) << label;
                }
                if (op.kind == traces::OpKind::Send)
                  ++sends[{prog.rank, op.peer, op.sequence}];
                if (op.kind == traces::OpKind::Recv)
                  ++recvs[{op.peer, prog.rank, op.sequence}];
              }
            }
            ASSERT_EQ(static_cast<int64_t>(forwards.size()), layers) << label;
            for (const auto& [layer, count] : forwards)
              ASSERT_EQ(count, p.micro_batches()) << label << " layer " << layer;
            ASSERT_EQ(sends, recvs) << label;
          }
  }
  EXPECT_GT(plans, 300);
}

} // namespace
} // namespace gputwin
