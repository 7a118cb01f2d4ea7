// The generated workload: FLOPs against the paper's counts, Megatron's collectives per layer, THE schedule's
// order, and matched pipeline messages. Plain C++.
#include "gputwin/models/flops.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/parameter_count.hpp"
#include "gputwin/models/pipeline_schedule.hpp"
#include "gputwin/models/workload.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

namespace gputwin {
namespace {

GptConfig small_model()
{
  return GptConfig{"small", 1024, 16, 8, 512, 51200};
}

ParallelPlan plan_of(int64_t tp, int64_t pp, int64_t dp, int64_t global_batch, bool sp, Recompute r,
                     Schedule schedule = Schedule::OneFOneB, int64_t chunks = 1)
{
  ParallelPlan p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.global_batch = global_batch;
  p.tp_comm = sp ? TpComm::SequenceParallel : TpComm::AllReduce;
  p.recompute = r;
  p.schedule = schedule;
  p.chunks = chunks;
  return p;
}

double gemm_flops(const traces::OpGraph& g)
{
  double flops = 0;
  for (const auto& program : g.ranks)
    for (const auto& op : program.ops)
      if (op.gemm.m > 0)
        flops += op.flops;
  return flops;
}

TEST(Workload, GemmFlopsAddUpToThePapersCounts)
{
  const GptConfig m = small_model();
  for (const Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
    const ParallelPlan plan = plan_of(4, 2, 2, 8, true, r);
    validate_plan(m, plan);
    // Folded: one program per stage stands for tp x dp ranks, each doing 1/t of the stage's work for 1/d of
    // the batch.
    const double total = gemm_flops(workload_graph(make_workload(m, plan))) * 4 * 2;
    const double model = model_flops_per_iteration(m, 8);
    const double B = 8, L = 8, s = 512, h = 1024;
    double expected = model;
    if (r == Recompute::Selective)
      expected += L * 4 * B * s * s * h; // the attention core's forward, once more
    if (r == Recompute::Full)
      expected += L * layer_forward_flops(m, 8);
    EXPECT_NEAR(total / expected, 1.0, 1e-12) << to_string(r);
  }
}

std::map<std::string, int> collectives_of_layer(const ParallelPlan& plan, traces::Phase phase)
{
  const traces::RankProgram program = stage_program(make_workload(small_model(), plan), 0);
  std::map<std::string, int> count;
  for (const auto& op : program.ops)
    if (op.kind == traces::OpKind::Collective && op.layer == 3 && op.micro_batch == 0 && op.phase == phase)
      ++count[op.name];
  return count;
}

TEST(Workload, TensorParallelCollectivesWhereMegatronPutsThem)
{
  const ParallelPlan tp = plan_of(4, 1, 1, 1, false, Recompute::None);
  EXPECT_EQ(collectives_of_layer(tp, traces::Phase::Forward), (std::map<std::string, int>{{"tp.all_reduce", 2}}));
  EXPECT_EQ(collectives_of_layer(tp, traces::Phase::Backward), (std::map<std::string, int>{{"tp.all_reduce", 2}}));
  const ParallelPlan sp = plan_of(4, 1, 1, 1, true, Recompute::None);
  EXPECT_EQ(collectives_of_layer(sp, traces::Phase::Forward),
            (std::map<std::string, int>{{"tp.all_gather", 2}, {"tp.reduce_scatter", 2}}));
  // Backward: g-bar's all-gather of the gradient and the re-gather of the saved shard for each block, and
  // g's reduce-scatter.
  EXPECT_EQ(collectives_of_layer(sp, traces::Phase::Backward),
            (std::map<std::string, int>{{"tp.all_gather", 4}, {"tp.reduce_scatter", 2}}));
  // Full recompute reruns the forward, collectives included.
  const ParallelPlan full = plan_of(4, 1, 1, 1, false, Recompute::Full);
  EXPECT_EQ(collectives_of_layer(full, traces::Phase::Recompute), (std::map<std::string, int>{{"tp.all_reduce", 2}}));
  const ParallelPlan one = plan_of(1, 1, 1, 1, true, Recompute::None);
  EXPECT_TRUE(collectives_of_layer(one, traces::Phase::Forward).empty());
}

TEST(Workload, StageProgramsRunTheScheduleModulesOrder)
{
  for (const auto& [schedule, chunks] :
       {std::pair{Schedule::OneFOneB, 1}, std::pair{Schedule::GPipe, 1}, std::pair{Schedule::Interleaved, 2}}) {
    const ParallelPlan plan = plan_of(2, 4, 1, 8, true, Recompute::Full, schedule, chunks);
    const Workload w = make_workload(small_model(), plan);
    for (int64_t stage = 0; stage < 4; ++stage) {
      // The (phase, micro-batch, chunk) of the compute ops, consecutive repeats merged, recompute as backward.
      std::vector<PipelineStep> order;
      for (const auto& op : stage_program(w, stage).ops) {
        if (op.kind != traces::OpKind::Compute || op.micro_batch < 0)
          continue;
        const PipelineStep step{op.phase == traces::Phase::Forward ? PipelinePhase::Forward : PipelinePhase::Backward,
                                op.micro_batch, op.chunk};
        if (order.empty() || !(order.back() == step))
          order.push_back(step);
      }
      EXPECT_EQ(order, stage_schedule(pipeline_shape(plan), stage)) << to_string(schedule) << " stage " << stage;
    }
  }
}

TEST(Workload, EveryPipelineSendHasItsReceive)
{
  const ParallelPlan plan = plan_of(2, 4, 2, 16, false, Recompute::Selective, Schedule::Interleaved, 2);
  const traces::OpGraph g = workload_graph(make_workload(small_model(), plan));
  std::map<std::tuple<int32_t, int32_t, int64_t>, double> sent, received;
  for (const auto& program : g.ranks)
    for (const auto& op : program.ops) {
      if (op.kind == traces::OpKind::Send)
        sent[{program.rank, op.peer, op.sequence}] = op.bytes;
      if (op.kind == traces::OpKind::Recv)
        received[{op.peer, program.rank, op.sequence}] = op.bytes;
    }
  EXPECT_EQ(sent.size(), 2u * 8u * 2u * 4u - 2u * 8u); // every (micro-batch, chunk) crosses 7 of 8 boundaries, twice
  EXPECT_EQ(sent, received);
}

TEST(Workload, DataParallelReduction)
{
  auto names = [](const ParallelPlan& plan, bool overlap) {
    std::map<std::string, int> count;
    for (const auto& op : stage_program(make_workload(small_model(), plan, {overlap}), 1).ops)
      if (op.kind == traces::OpKind::Collective && op.name.rfind("dp.", 0) == 0)
        ++count[op.name];
    return count;
  };
  ParallelPlan plan = plan_of(2, 2, 4, 16, true, Recompute::None);
  EXPECT_EQ(names(plan, false), (std::map<std::string, int>{{"dp.all_reduce", 1}}));
  // Overlapped on pipeline rank 1: one bucket for the stage (Megatron-Core buckets pp rank 0's first chunk only).
  EXPECT_EQ(names(plan, true), (std::map<std::string, int>{{"dp.all_reduce", 1}}));
  plan.zero_stage = 1;
  EXPECT_EQ(names(plan, false), (std::map<std::string, int>{{"dp.all_gather", 1}, {"dp.reduce_scatter", 1}}));
}

// The bytes of stage 0's collectives named `name` under `options`, summed.
double stage0_bytes(const GptConfig& m, const ParallelPlan& plan, const WorkloadOptions& options, const char* name)
{
  double bytes = 0;
  for (const auto& op : stage_program(make_workload(m, plan, options), 0).ops)
    if (op.name == name)
      bytes += op.bytes;
  return bytes;
}

// --grad-reduce-in-bf16: every reduction of the gradient buffer (main_grad) moves 2 bytes an element instead of 4,
// whole after the backward or bucket by bucket with --overlap-grad-reduce.
TEST(Workload, GradReduceInBf16HalvesEveryGradientReduction)
{
  const GptConfig m = small_model();
  ParallelPlan plan = plan_of(1, 1, 4, 8, false, Recompute::None);
  const double buffer = static_cast<double>(data_parallel_buffer_elements(stage_parameters_per_gpu(m, plan, 0), 4));
  for (const bool bf16 : {false, true})
    for (const bool overlap : {false, true}) {
      SCOPED_TRACE(std::string(bf16 ? "bf16" : "fp32") + (overlap ? ", overlapped" : ""));
      plan.grad_reduce_bf16 = bf16;
      WorkloadOptions options;
      options.overlap_grad_reduce = overlap;
      EXPECT_DOUBLE_EQ(stage0_bytes(m, plan, options, "dp.all_reduce"), (bf16 ? 2.0 : 4.0) * buffer);
    }
}

// Megatron's gradient passes (WorkloadOptions::gradient_passes): the buffer zeroed first; its NaN-check norm and
// 1/dp scaling (read, then read and write) before each reduction, which waits for it; the owned shard's clipping
// (norm, then scaling of fp32 main gradients) before Adam. dp 1: the norm only. Off: exactly these ops go.
TEST(Workload, GradientPassesFollowMegatron)
{
  const GptConfig m = small_model();
  for (const int64_t dp : {1, 4})
    for (const bool overlap : {false, true}) {
      SCOPED_TRACE(testing::Message() << "dp " << dp << (overlap ? ", overlapped" : ""));
      ParallelPlan plan = plan_of(1, 1, dp, 2 * dp, false, Recompute::None);
      plan.zero_stage = 1;
      const double buffer = static_cast<double>(data_parallel_buffer_elements(stage_parameters_per_gpu(m, plan, 0), dp));
      WorkloadOptions options;
      options.overlap_grad_reduce = overlap;
      const traces::RankProgram program = stage_program(make_workload(m, plan, options), 0);
      std::map<std::string, double> bytes;
      std::map<std::string, int> count;
      std::set<int64_t> checks;
      for (const traces::Op& op : program.ops) {
        bytes[op.name] += op.bytes;
        ++count[op.name];
        if (op.name == "grad.check_scale")
          checks.insert(op.id);
        if (op.name == "dp.reduce_scatter") { // each reduction waits for its check
          EXPECT_TRUE(std::any_of(op.deps.begin(), op.deps.end(), [&](int64_t d) { return checks.count(d) > 0; }));
        }
      }
      EXPECT_EQ(program.ops.front().name, "grad.zero");
      EXPECT_DOUBLE_EQ(bytes["grad.zero"], 4.0 * buffer);
      EXPECT_DOUBLE_EQ(bytes["grad.check_scale"], (dp > 1 ? 3.0 : 1.0) * 4.0 * buffer);
      EXPECT_EQ(count["grad.check_scale"], overlap && dp > 1 ? count["dp.reduce_scatter"] : 1);
      EXPECT_DOUBLE_EQ(bytes["optimizer.clip_grad"], 12.0 * buffer / static_cast<double>(dp));
      const auto adam = std::find_if(program.ops.begin(), program.ops.end(),
                                     [](const traces::Op& op) { return op.name == "optimizer.adam"; });
      ASSERT_NE(adam, program.ops.begin());
      EXPECT_EQ(std::prev(adam)->name, "optimizer.clip_grad");

      options.gradient_passes = false;
      std::vector<std::string> without, with_filtered;
      for (const traces::Op& op : stage_program(make_workload(m, plan, options), 0).ops)
        without.push_back(op.name);
      for (const traces::Op& op : program.ops)
        if (op.name != "grad.zero" && op.name != "grad.check_scale" && op.name != "optimizer.clip_grad")
          with_filtered.push_back(op.name);
      EXPECT_EQ(with_filtered, without);
    }
}

// --overlap-grad-reduce on pipeline rank 0's first chunk: Megatron-Core's buckets (distributed_data_parallel.py:
// bucket_size = max(4e7, 1e6 x dp) parameters; param_and_grad_buffer.py: parameters in reverse registration order,
// a bucket closing at the parameter that reaches the size). The paper's GPT (h 1024, L 8, tied embeddings): a
// layer holds 12.6M parameters, the word and position embeddings 52.9M, the output side only the final norm.
TEST(Workload, OverlappedGradientBucketsFollowMegatronCore)
{
  const GptConfig m = small_model();
  const double layer = 12.0 * 1024 * 1024 + 13.0 * 1024;
  const auto buckets = [&](int64_t dp) {
    ParallelPlan plan = plan_of(1, 1, dp, 2 * dp, false, Recompute::None);
    WorkloadOptions options;
    options.overlap_grad_reduce = true;
    std::vector<std::pair<int32_t, double>> out; // (layer whose backward closes it, bytes)
    double total = 0;
    for (const auto& op : stage_program(make_workload(m, plan, options), 0).ops)
      if (op.kind == traces::OpKind::Collective && op.name == "dp.all_reduce") {
        out.emplace_back(op.layer, op.bytes);
        total += op.bytes;
      }
    // Every element of the buffer reduced once: what the whole-buffer reduction without the overlap moves.
    EXPECT_DOUBLE_EQ(total, 4.0 * static_cast<double>(stage_parameters_per_gpu(m, plan, 0))) << "dp " << dp;
    return out;
  };
  // dp 4: 40M-parameter buckets: the final norm and layers 7-4 (50.4M), layers 3-0, then the embedding alone (the
  // last bucket: ready after the embedding's backward, the iteration's last compute).
  const auto small = buckets(4);
  ASSERT_EQ(small.size(), 3U);
  EXPECT_EQ(small[0].first, 4);
  EXPECT_DOUBLE_EQ(small[0].second, 4.0 * (2048 + 4 * layer));
  EXPECT_EQ(small[1].first, 0);
  EXPECT_DOUBLE_EQ(small[1].second, 4.0 * 4 * layer);
  EXPECT_EQ(small[2].first, -1);
  // dp 128: 128M-parameter buckets: everything (154M) closes at the embedding, one reduction after the backward.
  const auto large = buckets(128);
  ASSERT_EQ(large.size(), 1U);
  EXPECT_EQ(large[0].first, -1);
}

// WorkloadOptions::align_grad_reduce (Megatron-LM's training loop, config.grad_sync_func): the interleaved
// schedule starts a chunk's whole reduction `pipeline rank` backward steps after the chunk's last micro-batch, after
// that step's compute and before its send (schedules.py backward_step_helper); in 1F1B only the first stage
// reduces during its last backward, the others after it. Without it (NeMo), each chunk's buckets start inside its
// last micro-batch's backward. The same bytes either way.
TEST(Workload, AlignedGradientReductionsStartPipelineRankStepsLate)
{
  const GptConfig m = small_model();
  // pp 4 x 2 chunks (one layer each), 8 micro-batches, dp 2, ZeRO-1: one reduce-scatter per chunk.
  ParallelPlan plan = plan_of(1, 4, 2, 16, false, Recompute::None, Schedule::Interleaved, 2);
  plan.zero_stage = 1;
  struct Start {
    int32_t chunk;
    size_t backward_steps_before; // backward steps begun before the reduction (ops of phase Backward with mb >= 0)
    bool sent_after;              // the step's gradient send follows the reduction
  };
  const auto starts = [&](bool aligned, int64_t stage, double* bytes) {
    WorkloadOptions options;
    options.overlap_grad_reduce = true;
    options.align_grad_reduce = aligned;
    const traces::RankProgram program = stage_program(make_workload(m, plan, options), stage);
    std::vector<Start> out;
    std::set<std::pair<int32_t, int32_t>> steps; // (chunk, micro-batch) of backward steps begun
    for (size_t i = 0; i < program.ops.size(); ++i) {
      const traces::Op& op = program.ops[i];
      if (op.phase == traces::Phase::Backward && op.micro_batch >= 0 && op.kind == traces::OpKind::Compute)
        steps.insert({op.chunk, op.micro_batch});
      if (op.name != "dp.reduce_scatter")
        continue;
      *bytes += op.bytes;
      bool sent = false;
      for (size_t j = i + 1; j < program.ops.size() && program.ops[j].kind != traces::OpKind::Compute; ++j)
        sent = sent || program.ops[j].name == "pp.send_gradient";
      out.push_back({op.chunk, steps.size(), sent});
    }
    return out;
  };
  const size_t steps_per_chunk = 8; // backward order: chunk 1 mbs 0-3, chunk 0 mbs 0-3, chunk 1 mbs 4-7, chunk 0 4-7
  for (int64_t stage = 0; stage < 4; ++stage) {
    double hooked_bytes = 0, aligned_bytes = 0;
    const std::vector<Start> hooked = starts(false, stage, &hooked_bytes);
    const std::vector<Start> aligned = starts(true, stage, &aligned_bytes);
    ASSERT_EQ(hooked.size(), 2U) << "stage " << stage;
    ASSERT_EQ(aligned.size(), 2U) << "stage " << stage;
    EXPECT_DOUBLE_EQ(aligned_bytes, hooked_bytes);
    // NeMo: chunk 1's last micro-batch is backward step 11 (the 12th), chunk 0's step 15 (the 16th).
    EXPECT_EQ(hooked[0].chunk, 1);
    EXPECT_EQ(hooked[0].backward_steps_before, steps_per_chunk + 4);
    EXPECT_EQ(hooked[1].chunk, 0);
    EXPECT_EQ(hooked[1].backward_steps_before, 2 * steps_per_chunk);
    // Megatron-LM: chunk 1's reduction in backward step 11 + stage, before its send; chunk 0's (step 15 + stage,
    // beyond the last step from stage 1 on) after the cooldown.
    EXPECT_EQ(aligned[0].chunk, 1);
    EXPECT_EQ(aligned[0].backward_steps_before, steps_per_chunk + 4 + static_cast<size_t>(stage));
    EXPECT_EQ(aligned[1].chunk, 0);
    EXPECT_EQ(aligned[1].backward_steps_before, 2 * steps_per_chunk);
    EXPECT_TRUE(aligned[0].sent_after) << "stage " << stage;
    // No send after chunk 0's: stage 0's first virtual stage sends nowhere, the others reduce after the cooldown.
    EXPECT_FALSE(aligned[1].sent_after) << "stage " << stage;
  }
  // 1F1B: the first stage as with the hooks (inside its last backward), the last after its last backward's send.
  ParallelPlan one_f_one_b = plan_of(1, 2, 2, 8, false, Recompute::None);
  one_f_one_b.zero_stage = 1;
  for (int64_t stage = 0; stage < 2; ++stage) {
    WorkloadOptions options;
    options.overlap_grad_reduce = true;
    options.align_grad_reduce = true;
    const traces::RankProgram program = stage_program(make_workload(m, one_f_one_b, options), stage);
    size_t reduction = 0, last_send = 0;
    for (size_t i = 0; i < program.ops.size(); ++i) {
      if (program.ops[i].name == "dp.reduce_scatter" && reduction == 0)
        reduction = i;
      if (program.ops[i].name == "pp.send_gradient")
        last_send = i;
    }
    ASSERT_GT(reduction, 0U);
    if (stage == 0)
      EXPECT_EQ(last_send, 0U); // the first stage sends no gradient; its reduction is in its last backward
    else
      EXPECT_GT(reduction, last_send);
  }
}

// --fp8-param-gather (FP8 with ZeRO-1): the layers' weights are FP8 parameters and all-gathered in FP8, the
// embedding and norms in BF16 -- after the step, or bucket by bucket with --overlap-param-gather.
TEST(Workload, Fp8ParamGatherMovesTheLayersWeightsInFp8)
{
  const GptConfig m = small_model(); // h 1024, L 8: 12.6M parameters a layer
  ParallelPlan plan = plan_of(1, 1, 4, 8, false, Recompute::None);
  plan.zero_stage = 1;
  plan.precision = GemmPrecision::Fp8;
  const double layers = 8 * (12.0 * 1024 * 1024 + 13.0 * 1024);
  const double buffer = static_cast<double>(data_parallel_buffer_elements(stage_parameters_per_gpu(m, plan, 0), 4));
  for (const bool fp8_gather : {false, true})
    for (const bool overlap : {false, true}) {
      SCOPED_TRACE(std::string(fp8_gather ? "fp8" : "bf16") + (overlap ? ", overlapped" : ", after the step"));
      plan.fp8_param_gather = fp8_gather;
      WorkloadOptions options;
      options.overlap_grad_reduce = overlap;
      options.overlap_param_gather = overlap;
      EXPECT_DOUBLE_EQ(stage0_bytes(m, plan, options, "dp.all_gather"), 2.0 * buffer - (fp8_gather ? layers : 0.0));
    }
}

// FP8 delayed scaling: Transformer Engine reduces the amaxes when a chunk's forward leaves its fp8_autocast region
// and when its backward ends, in every micro-batch, on the compute stream; with FP8 parameters the weights' amaxes
// once more per iteration.
TEST(Workload, Fp8AmaxReductionsPerChunkAndMicroBatch)
{
  const GptConfig m = small_model(); // 8 layers
  ParallelPlan plan = plan_of(1, 2, 2, 8, false, Recompute::None, Schedule::Interleaved, 2);
  plan.precision = GemmPrecision::Fp8;
  ASSERT_EQ(plan.micro_batches(), 4);
  for (const bool fp8_params : {false, true}) {
    SCOPED_TRACE(fp8_params ? "FP8 parameters" : "BF16 parameters");
    plan.zero_stage = fp8_params ? 1 : 0;
    plan.fp8_param_gather = fp8_params;
    std::map<traces::Phase, int> count;
    double forward_bytes = 0;
    for (const auto& op : stage_program(make_workload(m, plan), 1).ops)
      if (op.name == "fp8.amax.all_reduce") {
        EXPECT_EQ(op.stream, compute_stream);
        ++count[op.phase];
        if (op.phase == traces::Phase::Forward)
          forward_bytes = op.bytes;
      }
    EXPECT_EQ(count[traces::Phase::Forward], 4 * 2);  // micro-batches x chunks
    EXPECT_EQ(count[traces::Phase::Backward], 4 * 2);
    EXPECT_EQ(count[traces::Phase::Optimizer], fp8_params ? 1 : 0);
    // 2 layers a chunk, 4 linear modules a layer, fp32: inputs and weights, or the inputs alone.
    EXPECT_DOUBLE_EQ(forward_bytes, 2 * 4 * 4.0 * (fp8_params ? 1 : 2));
  }
}

// MXFP8 and NVFP4 (Transformer Engine MXFP8BlockScaling, NVFP4BlockScaling) keep no amax history: their block
// scales come from the cast kernel, so no amax all-reduce is emitted, with BF16 or quantized parameters alike; FP8
// delayed scaling has them.
TEST(Workload, OnlyDelayedScalingReducesAmaxes)
{
  const GptConfig m = small_model();
  ParallelPlan plan = plan_of(1, 2, 2, 8, false, Recompute::None, Schedule::Interleaved, 2);
  for (const GemmPrecision precision : {GemmPrecision::Fp8, GemmPrecision::Mxfp8, GemmPrecision::Nvfp4})
    for (const bool params : {false, true}) {
      SCOPED_TRACE(to_string(precision) + (params ? ", quantized parameters" : ", BF16 parameters"));
      plan.precision = precision;
      plan.zero_stage = params ? 1 : 0;
      plan.fp8_param_gather = params;
      int amax = 0, casts = 0;
      for (int64_t stage = 0; stage < plan.pp; ++stage)
        for (const auto& op : stage_program(make_workload(m, plan), stage).ops) {
          amax += op.name == "fp8.amax.all_reduce" ? 1 : 0;
          casts += op.name == "fp8.weight_cast" ? 1 : 0;
        }
      EXPECT_EQ(amax > 0, precision == GemmPrecision::Fp8);
      EXPECT_EQ(casts, 2) << "one weight cast per stage after the step, whatever the recipe";
    }
}

// FP8 tensorwise current scaling (--fp8-recipe tensorwise; TE Float8CurrentScaling): no amax history, so none of
// delayed scaling's per-chunk amax reductions -- only the FP8 parameters' once-per-iteration amax reduction before
// the step (TE tensor/utils.py _cast_master_weights_to_fp8_current_scaling) -- and every cast reads its operand once
// more for the amax: each quantized GEMM op and the weight cast carry 2 more bytes per cast element, the GEMM's
// FLOPs and shape unchanged.
TEST(Workload, TensorwiseCurrentScalingReadsEachCastOperandTwice)
{
  const GptConfig m = small_model();
  ParallelPlan plan = plan_of(1, 2, 2, 8, false, Recompute::None, Schedule::Interleaved, 2);
  plan.precision = GemmPrecision::Fp8;
  plan.zero_stage = 1;
  plan.fp8_param_gather = true;
  const traces::RankProgram delayed = stage_program(make_workload(m, plan), 1);
  plan.fp8_recipe = Fp8Recipe::Tensorwise;
  ASSERT_TRUE(plan.current_scaling());
  ASSERT_FALSE(plan.delayed_scaling());
  const traces::RankProgram current = stage_program(make_workload(m, plan), 1);

  std::map<traces::Phase, int> amax;
  for (const auto& op : current.ops)
    amax[op.phase] += op.name == "fp8.amax.all_reduce" ? 1 : 0;
  EXPECT_EQ(amax[traces::Phase::Forward], 0);
  EXPECT_EQ(amax[traces::Phase::Backward], 0);
  EXPECT_EQ(amax[traces::Phase::Optimizer], 1);

  // The same ops otherwise, in the same order; quantized GEMMs and the weight cast read 2 bytes more per element.
  std::vector<const traces::Op*> delayed_ops;
  for (const auto& op : delayed.ops)
    if (op.name != "fp8.amax.all_reduce" || op.phase == traces::Phase::Optimizer)
      delayed_ops.push_back(&op);
  ASSERT_EQ(delayed_ops.size(), current.ops.size());
  int quantized_gemms = 0;
  for (size_t i = 0; i < current.ops.size(); ++i) {
    const traces::Op& a = *delayed_ops[i];
    const traces::Op& b = current.ops[i];
    SCOPED_TRACE(b.name);
    ASSERT_EQ(a.name, b.name);
    EXPECT_DOUBLE_EQ(a.flops, b.flops);
    if (b.gemm.precision == GemmPrecision::Fp8 && b.gemm.m > 0) {
      // A quantized GEMM's bytes: its FP8 operands and BF16 output, plus (2 + 2) per element of the operand it
      // casts (forward: the input; dgrad: the output gradient; wgrad reuses both); tensorwise 2 more.
      const auto& g = b.gemm;
      const double operands =
          static_cast<double>((g.m * g.k + g.k * g.n) + 2 * g.m * g.n) * static_cast<double>(g.batch);
      const double cast_elements = (a.bytes - operands) / 4.0;
      EXPECT_GE(cast_elements, 0.0);
      EXPECT_NEAR(b.bytes - a.bytes, 2.0 * cast_elements, 1e-6 * a.bytes);
      quantized_gemms += cast_elements > 0 ? 1 : 0;
    } else if (b.name == "fp8.weight_cast") {
      EXPECT_DOUBLE_EQ(b.bytes - a.bytes, 2.0 * a.bytes / 4.0); // read 2 + write 1 + 1 per weight -> + 2
    } else {
      EXPECT_DOUBLE_EQ(a.bytes, b.bytes);
    }
  }
  EXPECT_GT(quantized_gemms, 0);
}

// --fp8-param-gather gathers the layers' weights in the recipe's element size with its block scales: FP8 1 byte,
// MXFP8 1 + 1/32 (an E8M0 scale per 32), NVFP4 1/2 + 1/16 (an E4M3 scale per 16); the rest in BF16.
TEST(Workload, QuantizedParamGatherMovesTheRecipesBytes)
{
  const GptConfig m = small_model(); // h 1024, L 8
  ParallelPlan plan = plan_of(1, 1, 4, 8, false, Recompute::None);
  plan.zero_stage = 1;
  plan.fp8_param_gather = true;
  const double layers = 8 * (12.0 * 1024 * 1024 + 13.0 * 1024);
  const double buffer = static_cast<double>(data_parallel_buffer_elements(stage_parameters_per_gpu(m, plan, 0), 4));
  for (const auto& [precision, element_bytes] : {std::pair{GemmPrecision::Fp8, 1.0},
                                                 std::pair{GemmPrecision::Mxfp8, 1.0 + 1.0 / 32},
                                                 std::pair{GemmPrecision::Nvfp4, 0.5 + 1.0 / 16}}) {
    SCOPED_TRACE(to_string(precision));
    plan.precision = precision;
    const double expected = 2.0 * buffer - layers * (2.0 - element_bytes);
    EXPECT_NEAR(stage0_bytes(m, plan, {}, "dp.all_gather"), expected, 1e-12 * expected);
  }
}

// The linear layers' GEMMs carry the plan's precision, their operands at its element size with scales, and the
// cast of the bf16 operand (read 2, write a row-wise and a column-wise copy; NVFP4 reads it twice more, for its
// per-tensor amax and for the Hadamard-transformed column-wise copy) in their bytes.
TEST(Workload, LinearGemmsCarryThePlansPrecisionAndCastBytes)
{
  const GptConfig m = small_model();
  for (const GemmPrecision precision : {GemmPrecision::Fp8, GemmPrecision::Mxfp8, GemmPrecision::Nvfp4}) {
    SCOPED_TRACE(to_string(precision));
    ParallelPlan plan = plan_of(1, 1, 1, 1, false, Recompute::None);
    plan.precision = precision;
    const double e = quantized_element_bytes(precision);
    bool found = false;
    for (const auto& op : stage_program(make_workload(m, plan), 0).ops) {
      if (op.name == "attn.scores.fwd") {
        EXPECT_EQ(op.gemm.precision, GemmPrecision::Bf16);
      }
      if (op.name != "fc1.fwd")
        continue;
      found = true;
      const traces::GemmShape& g = op.gemm;
      EXPECT_EQ(g.precision, precision);
      const double mk = static_cast<double>(g.m * g.k), kn = static_cast<double>(g.k * g.n);
      // fc1's forward casts its activation (m x k).
      const double reads = precision == GemmPrecision::Nvfp4 ? 3.0 : 1.0;
      EXPECT_DOUBLE_EQ(op.bytes, (mk + kn) * e + 2.0 * static_cast<double>(g.m * g.n) + (2.0 * reads + 2.0 * e) * mk);
    }
    EXPECT_TRUE(found);
  }
}

// ZeRO-2/3 over dp 4 (pp 1), two micro-batches: counts and bytes from the units' sizes (sharded_units).
TEST(Workload, Zero2And3ReduceScatterEveryUnitAndZero3GathersEveryUnitTwice)
{
  const GptConfig m = small_model(); // the paper's GPT: h 1024, L 8, s 512, v 51200, tied embeddings
  ParallelPlan plan = plan_of(1, 1, 4, 8, false, Recompute::None);
  ASSERT_EQ(plan.micro_batches(), 2);
  const int64_t h = 1024, layers = 8, micro_batches = 2;
  const double layer = 12.0 * h * h + 13.0 * h;
  const double word = 51200.0 * h, positions = 512.0 * h, final_norm = 2.0 * h;
  const double embedding = word + positions;
  const double output = final_norm;               // its own parameters (tied: the matrix is the embedding's)
  const double output_gathered = final_norm + word; // what its gather moves
  const double params = layers * layer + embedding + output;
  ASSERT_EQ(params, static_cast<double>(stage_parameters_per_gpu(m, plan, 0)));

  struct Tally {
    int ops = 0;
    double bytes = 0;
    int in_optimizer = 0;
    std::set<int32_t> streams;
  };
  auto tally = [&](const ParallelPlan& p, bool overlaps) {
    std::map<std::string, Tally> out;
    const WorkloadOptions options = overlaps ? applicable_overlaps(p) : WorkloadOptions{};
    for (const auto& op : stage_program(make_workload(m, p, options), 0).ops)
      if (op.kind == traces::OpKind::Collective && op.name.rfind("dp.", 0) == 0) {
        Tally& t = out[op.name];
        ++t.ops;
        t.bytes += op.bytes;
        t.in_optimizer += op.phase == traces::Phase::Optimizer ? 1 : 0;
        t.streams.insert(op.stream);
      }
    return out;
  };
  const double gradient_bytes = 4 * params; // FP32 main grads, reduced once per micro-batch
  for (const bool overlaps : {false, true}) {
    SCOPED_TRACE(overlaps ? "with the applicable overlaps" : "without overlaps");
    // ZeRO-2: a reduce-scatter per unit (8 layers, embedding, output) and micro-batch; after the step, the updated
    // parameters all-gathered as ZeRO-1 does (bucket by bucket with --overlap-param-gather).
    plan.zero_stage = 2;
    std::map<std::string, Tally> t = tally(plan, overlaps);
    EXPECT_EQ(t.count("dp.all_reduce"), 0U);
    EXPECT_EQ(t["dp.reduce_scatter"].ops, micro_batches * (layers + 2));
    EXPECT_DOUBLE_EQ(t["dp.reduce_scatter"].bytes, micro_batches * gradient_bytes);
    EXPECT_EQ(t["dp.reduce_scatter"].streams, (std::set<int32_t>{dp_stream}));
    // With the overlaps: one gather per unit (the output layer's final norm, 8 layers, the embedding), else one
    // after the step.
    EXPECT_EQ(t["dp.all_gather"].ops, overlaps ? layers + 2 : 1);
    EXPECT_DOUBLE_EQ(t["dp.all_gather"].bytes, 2.0 * static_cast<double>(data_parallel_buffer_elements(
                                                          static_cast<int64_t>(params), 4)));

    // ZeRO-3: the same reduce-scatters; every unit gathered before its forward (embedding, layers, output) and the
    // layers and the embedding again before their backward (the output layer stays gathered); nothing after the
    // step.
    plan.zero_stage = 3;
    t = tally(plan, overlaps);
    EXPECT_EQ(t.count("dp.all_reduce"), 0U);
    EXPECT_EQ(t["dp.reduce_scatter"].ops, micro_batches * (layers + 2));
    EXPECT_DOUBLE_EQ(t["dp.reduce_scatter"].bytes, micro_batches * gradient_bytes);
    EXPECT_EQ(t["dp.all_gather"].ops, micro_batches * ((layers + 2) + (layers + 1)));
    const double forward = 2 * (embedding + layers * layer + output_gathered);
    const double backward = 2 * (layers * layer + embedding);
    EXPECT_DOUBLE_EQ(t["dp.all_gather"].bytes, micro_batches * (forward + backward));
    EXPECT_EQ(t["dp.all_gather"].in_optimizer, 0);
    EXPECT_EQ(t["dp.all_gather"].streams, (std::set<int32_t>{param_gather_stream}));
  }
  // BF16 gradients halve the reduce-scatters; FP8 parameters halve the layers' gathers.
  plan.grad_reduce_bf16 = true;
  EXPECT_DOUBLE_EQ(tally(plan, false)["dp.reduce_scatter"].bytes, micro_batches * 2 * params);
  plan.grad_reduce_bf16 = false;
  plan.precision = GemmPrecision::Fp8;
  plan.fp8_param_gather = true;
  EXPECT_DOUBLE_EQ(tally(plan, false)["dp.all_gather"].bytes,
                   micro_batches * (2 * (embedding + output_gathered + embedding) + 2 * layers * layer));
}

// ZeRO-3's prefetch: each layer's first op waits for its own gather, which was issued before the previous layer's
// first op and waited for the end of the layer before that (two layers gathered at once), forward and backward.
TEST(Workload, Zero3GathersOneUnitAheadAndEachUnitWaitsForItsGather)
{
  ParallelPlan plan = plan_of(1, 1, 4, 8, false, Recompute::Full);
  plan.zero_stage = 3;
  const traces::RankProgram program = stage_program(make_workload(small_model(), plan), 0);
  const std::vector<traces::Op>& ops = program.ops;
  // Per (phase, micro-batch, layer): the index of its first and last compute op; per (phase, layer) the gathers.
  using Key = std::tuple<bool, int32_t, int32_t>; // backward, micro-batch, layer
  std::map<Key, size_t> first, last;
  std::map<int64_t, size_t> index_of;
  for (size_t i = 0; i < ops.size(); ++i) {
    index_of[ops[i].id] = i;
    const traces::Op& op = ops[i];
    if (op.kind != traces::OpKind::Compute || op.layer < 0 || op.micro_batch < 0)
      continue;
    const Key key{op.phase != traces::Phase::Forward, op.micro_batch, op.layer};
    first.emplace(key, i);
    last[key] = i;
  }
  int checked = 0;
  for (const auto& [key, i] : first) {
    const auto [backward, mb, layer] = key;
    const traces::Op& op = ops[i];
    // Its gather: a dp.all_gather of the same layer among its dependencies.
    const traces::Op* gather = nullptr;
    for (const int64_t dep : op.deps)
      if (ops[index_of.at(dep)].name == "dp.all_gather" && ops[index_of.at(dep)].layer == layer)
        gather = &ops[index_of.at(dep)];
    ASSERT_NE(gather, nullptr) << "layer " << layer << " mb " << mb << (backward ? " backward" : " forward");
    EXPECT_EQ(gather->stream, param_gather_stream);
    // Issued before the unit before it began, after the one before that ended (layers 2 .. L-1 forward, L-3 .. 0
    // backward: their two predecessors are layers).
    const int32_t previous = backward ? layer + 1 : layer - 1, before_previous = backward ? layer + 2 : layer - 2;
    if (before_previous < 0 || before_previous >= 8)
      continue;
    EXPECT_LT(index_of.at(gather->id), first.at(Key{backward, mb, previous}));
    ASSERT_EQ(gather->deps.size(), 1U);
    EXPECT_EQ(index_of.at(gather->deps[0]), last.at(Key{backward, mb, before_previous}));
    ++checked;
  }
  EXPECT_EQ(checked, 2 * 2 * (8 - 2)); // micro-batches x directions x layers with two layers before them
}

} // namespace
} // namespace gputwin
