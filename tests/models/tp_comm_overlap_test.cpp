// --tp-comm-overlap (WorkloadOptions::tp_comm_overlap, layer_ops.hpp TpCommOverlap): the chunked linear GEMMs cost
// what the unchunked ones do, the TP communication moves the same bytes per rank, the chunks wait for exactly the
// ring step / GEMM chunk they need, and a simulated iteration gets shorter.
#include "gputwin/models/layer_ops.hpp"
#include "gputwin/models/op_vocabulary.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/traces/collective_op.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#ifdef GPUTWIN_CLI
#include "cli/json_report.hpp"
#include "cli/run_cli.hpp"

#include "gputwin/traces/json_value.hpp"
#include "test_temp_path.hpp"

#include <fstream>
#include <iterator>
#endif

namespace gputwin {
namespace {

// 8 layers of h 1024, 16 heads, s 512; on tp 4 the sequence splits in 4 slices of 128 tokens per micro-batch.
GptConfig small_model()
{
  return GptConfig{"small", 1024, 16, 8, 512, 51200};
}

ParallelPlan sp_plan(int64_t tp, Recompute recompute, bool sp = true)
{
  ParallelPlan p;
  p.tp = tp;
  p.pp = 2;
  p.dp = 1;
  p.global_batch = 4;
  p.micro_batch = 2;
  p.tp_comm = sp ? TpComm::SequenceParallel : TpComm::AllReduce;
  p.recompute = recompute;
  validate_plan(small_model(), p);
  return p;
}

traces::RankProgram program(const ParallelPlan& plan, bool overlap, int64_t stage = 0)
{
  WorkloadOptions options;
  options.tp_comm_overlap = overlap;
  return stage_program(make_workload(small_model(), plan, options), stage);
}

// Per vocabulary name: the summed FLOPs and bytes of the compute ops (chunks add up to their op).
std::map<std::string, std::pair<double, double>> compute_cost_by_name(const traces::RankProgram& p)
{
  std::map<std::string, std::pair<double, double>> cost;
  for (const traces::Op& op : p.ops)
    if (op.kind == traces::OpKind::Compute) {
      cost[op.name].first += op.flops;
      cost[op.name].second += op.bytes;
    }
  return cost;
}

TEST(TpCommOverlap, ChunkedGemmsCostWhatTheUnchunkedOnesDo)
{
  for (const Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full})
    for (int64_t stage = 0; stage < 2; ++stage) {
      SCOPED_TRACE(to_string(r) + " stage " + std::to_string(stage));
      const auto plain = compute_cost_by_name(program(sp_plan(4, r), false, stage));
      const auto overlapped = compute_cost_by_name(program(sp_plan(4, r), true, stage));
      ASSERT_EQ(plain.size(), overlapped.size());
      double gemm_flops_plain = 0, gemm_flops_overlapped = 0;
      for (const auto& [name, cost] : plain) {
        ASSERT_TRUE(overlapped.count(name)) << name;
        EXPECT_NEAR(overlapped.at(name).first, cost.first, 1e-9 * cost.first) << name;
        EXPECT_NEAR(overlapped.at(name).second, cost.second, 1e-9 * cost.second) << name;
      }
      for (const traces::Op& op : program(sp_plan(4, r), false, stage).ops)
        gemm_flops_plain += op.gemm.m > 0 ? op.flops : 0;
      for (const traces::Op& op : program(sp_plan(4, r), true, stage).ops)
        gemm_flops_overlapped += op.gemm.m > 0 ? op.flops : 0;
      EXPECT_GT(gemm_flops_plain, 0);
      EXPECT_NEAR(gemm_flops_overlapped / gemm_flops_plain, 1.0, 1e-12);
    }
}

// The layer's TP traffic per rank: each collective's bytes x its bus factor (what one rank sends: an all-gather or
// reduce-scatter of B moves (t - 1)/t B, a ring step its slice), with the count of each collective.
struct LayerComm {
  double bytes_per_rank = 0;
  std::map<std::string, int> count;
};
LayerComm layer_comm(const traces::RankProgram& p, traces::Phase phase, int tp)
{
  LayerComm c;
  for (const traces::Op& op : p.ops)
    if (op.kind == traces::OpKind::Collective && op.layer == 3 && op.micro_batch == 0 && op.phase == phase) {
      c.bytes_per_rank += op.bytes * bus_bandwidth_factor(op.collective, tp);
      ++c.count[op.name];
    }
  return c;
}

TEST(TpCommOverlap, LayerMovesTheSameBytesPerRank)
{
  const int t = 4;
  const int splits = static_cast<int>(userbuffers_pipeline_splits);
  const traces::RankProgram plain = program(sp_plan(t, Recompute::Full), false);
  const traces::RankProgram overlapped = program(sp_plan(t, Recompute::Full), true);
  for (const traces::Phase phase : {traces::Phase::Forward, traces::Phase::Recompute, traces::Phase::Backward}) {
    SCOPED_TRACE(traces::to_string(phase));
    const LayerComm a = layer_comm(plain, phase, t), b = layer_comm(overlapped, phase, t);
    EXPECT_GT(a.bytes_per_rank, 0);
    EXPECT_NEAR(b.bytes_per_rank, a.bytes_per_rank, 1e-9 * a.bytes_per_rank);
    if (phase == traces::Phase::Backward) {
      // proj/fc2 dgrad: ring exchange; qkv/fc1: the bulk re-gather and input-gradient reduce-scatter as before.
      EXPECT_EQ(b.count, (std::map<std::string, int>{
                             {"tp.ring_exchange", 2 * (t - 1)}, {"tp.all_gather", 2}, {"tp.reduce_scatter", 2}}));
    } else {
      // qkv/fc1: ring exchange instead of the all-gather; proj/fc2: pipelined reduce-scatter chunks.
      EXPECT_EQ(b.count, (std::map<std::string, int>{{"tp.ring_exchange", 2 * (t - 1)},
                                                     {"tp.reduce_scatter_chunk", 2 * splits}}));
    }
  }
}

std::vector<const traces::Op*> layer_ops_named(const traces::RankProgram& p, const std::string& name,
                                               traces::Phase phase)
{
  std::vector<const traces::Op*> ops;
  for (const traces::Op& op : p.ops)
    if (op.name == name && op.layer == 3 && op.micro_batch == 0 && op.phase == phase)
      ops.push_back(&op);
  return ops;
}

// Ring exchange before `gemm` (t chunks): step 0 after `input`, chunk 0 without waiting, chunk i after step i - 1.
void expect_ring_exchange(const traces::RankProgram& p, traces::Phase phase, const std::string& input,
                          const std::string& gemm, int64_t t, int64_t tokens)
{
  SCOPED_TRACE(gemm);
  const auto chunks = layer_ops_named(p, gemm, phase);
  const auto inputs = layer_ops_named(p, input, phase);
  ASSERT_EQ(chunks.size(), static_cast<size_t>(t));
  ASSERT_FALSE(inputs.empty());
  // The steps of this GEMM: the ring steps between its input and its last chunk.
  std::vector<const traces::Op*> steps;
  for (const traces::Op& op : p.ops)
    if (op.name == "tp.ring_exchange" && op.id > chunks.front()->id - 2 && op.id < chunks.back()->id)
      steps.push_back(&op);
  ASSERT_EQ(steps.size(), static_cast<size_t>(t - 1));
  int64_t input_id = -1; // the last `input` op before the ring starts
  for (const traces::Op* op : inputs)
    if (op->id < steps.front()->id)
      input_id = std::max(input_id, op->id);
  EXPECT_EQ(steps.front()->deps, std::vector<int64_t>{input_id});
  for (const traces::Op* step : steps) {
    EXPECT_EQ(step->stream, tp_async_stream);
    EXPECT_EQ(step->collective, CollectiveOp::SendRecv);
  }
  EXPECT_TRUE(chunks[0]->deps.empty());
  for (size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i]->stream, compute_stream);
    EXPECT_EQ(chunks[i]->gemm.m, tokens / t) << i;
    if (i > 0) {
      EXPECT_EQ(chunks[i]->deps, std::vector<int64_t>{steps[i - 1]->id}) << i;
    }
  }
}

TEST(TpCommOverlap, ChunksWaitForTheirSliceAndTheirReduction)
{
  const int64_t t = 4, splits = userbuffers_pipeline_splits;
  const int64_t tokens = 512 * 2; // s b: the whole sequence inside the TP region
  const traces::RankProgram p = program(sp_plan(t, Recompute::None), true);
  const traces::Phase fwd = traces::Phase::Forward, bwd = traces::Phase::Backward;
  expect_ring_exchange(p, fwd, "ln1.fwd", "qkv.fwd", t, tokens);
  expect_ring_exchange(p, fwd, "ln2.fwd", "fc1.fwd", t, tokens);
  expect_ring_exchange(p, bwd, "dropout_add.bwd", "fc2.dgrad", t, tokens);
  expect_ring_exchange(p, bwd, "dropout_add.bwd", "proj.dgrad", t, tokens);

  // proj and fc2 forward: each chunk's partial output reduce-scattered after it, on the async stream; the
  // bias-dropout-add waits for the last reduction.
  for (const std::string gemm : {"proj.fwd", "fc2.fwd"}) {
    SCOPED_TRACE(gemm);
    const auto chunks = layer_ops_named(p, gemm, fwd);
    ASSERT_EQ(chunks.size(), static_cast<size_t>(splits));
    int64_t last_reduction = -1;
    for (const traces::Op* chunk : chunks) {
      EXPECT_EQ(chunk->gemm.m, tokens / splits);
      const traces::Op& reduction = p.ops.at(static_cast<size_t>(chunk->id + 1));
      EXPECT_EQ(reduction.name, "tp.reduce_scatter_chunk"); // costed as a userbuffers transfer, not NCCL
      EXPECT_EQ(reduction.stream, tp_async_stream);
      EXPECT_EQ(reduction.deps, std::vector<int64_t>{chunk->id});
      last_reduction = reduction.id;
    }
    const traces::Op& next = p.ops.at(static_cast<size_t>(last_reduction + 1));
    EXPECT_EQ(next.name, "dropout_add.fwd");
    EXPECT_EQ(next.deps, std::vector<int64_t>{last_reduction});
  }
  // The weight gradients after a ring-exchanged dgrad read the gathered output gradient: they come after its last
  // chunk on the compute stream, once.
  EXPECT_EQ(layer_ops_named(p, "fc2.wgrad", bwd).size(), 1u);
  EXPECT_EQ(layer_ops_named(p, "proj.wgrad", bwd).size(), 1u);
}

TEST(TpCommOverlap, NothingChangesWithoutSequenceParallelismOrTensorParallelism)
{
  for (const ParallelPlan& plan : {sp_plan(4, Recompute::None, false), sp_plan(1, Recompute::None, false)}) {
    const traces::RankProgram a = program(plan, false), b = program(plan, true);
    ASSERT_EQ(a.ops.size(), b.ops.size());
    for (size_t i = 0; i < a.ops.size(); ++i) {
      EXPECT_EQ(a.ops[i].name, b.ops[i].name);
      EXPECT_EQ(a.ops[i].deps, b.ops[i].deps);
      EXPECT_EQ(a.ops[i].flops, b.ops[i].flops);
    }
  }
}

#ifdef GPUTWIN_CLI
double iteration_time_s(const std::string& arguments)
{
  const testing::CliResult r = testing::run_gputwin(arguments + " --json", false);
  EXPECT_EQ(r.exit_code, 0) << arguments;
  return testing::number(traces::parse_json(r.output), "iteration_time_s");
}

// GPT-3 175B layers on one DGX H100 (tp 8, SP, micro-batch 4: 8,192 tokens, 1,024 per ring-exchange chunk): the
// overlap hides the all-gathers before QKV / fc1 / the row-parallel dgrads and most of the forward reduce-scatters
// behind their GEMMs, so the iteration is shorter, in the full simulation and in the estimate. Llama3-8B (1,024
// tokens per ring chunk too, but GEMMs a third of the size) also gains now that the chunk collectives pay
// userbuffers' ~4 us instead of NCCL's ~66 us call cost (sim/collectives userbuffers_cost.hpp; it lost 26% when
// they were NCCL calls). sim/README.md "TP communication overlap".
TEST(TpCommOverlapCli, ShortensTheIterationOfLargeGemms)
{
  const std::string plan = "simulate --model gpt3-175b --cluster dgx-h100 --tp 8 --sp --layers 2 --global-batch 8 "
                           "--micro-batch 4";
  const double without = iteration_time_s(plan);
  const double with = iteration_time_s(plan + " --tp-comm-overlap");
  std::printf("gpt3-175b (2 layers) dgx-h100 tp 8 sp mb 4: %.6f s without, %.6f s with --tp-comm-overlap\n",
              without, with);
  EXPECT_GT(without, 0);
  EXPECT_GT(with, 0);
  EXPECT_LT(with, without);
  // The estimator runs the same programs.
  EXPECT_LT(iteration_time_s(plan + " --tp-comm-overlap --estimate"), iteration_time_s(plan + " --estimate"));
  const std::string small = "simulate --model llama3-8b --cluster dgx-h100 --tp 8 --sp --attention flash";
  const double small_without = iteration_time_s(small);
  const double small_with = iteration_time_s(small + " --tp-comm-overlap");
  std::printf("llama3-8b dgx-h100 tp 8 sp flash: %.6f s without, %.6f s with --tp-comm-overlap\n", small_without,
              small_with);
  EXPECT_LT(small_with, small_without);
}

TEST(TpCommOverlapCli, TimelineShowsTheChunksAndTheRingSteps)
{
  const std::string file = test_temp_path("timeline.json");
  const testing::CliResult r =
      testing::run_gputwin("simulate --model llama3-8b --cluster dgx-h100 --tp 8 --sp --attention flash --layers 2 "
                           "--tp-comm-overlap --timeline '" + file + "'",
                           false);
  ASSERT_EQ(r.exit_code, 0);
  std::ifstream in(file);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"name\":\"tp.ring_exchange\""), std::string::npos);
  EXPECT_NE(text.find("\"name\":\"qkv.fwd\""), std::string::npos);
  EXPECT_NE(text.find("\"name\":\"tp.reduce_scatter_chunk\""), std::string::npos);
}
#endif

} // namespace
} // namespace gputwin
