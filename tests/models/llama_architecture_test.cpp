// Llama-style architectures (grouped-query attention, SwiGLU, RMSNorm, RoPE, untied embeddings, no biases, no
// dropout), context parallelism and uneven pipeline stages in the analytic models and the generated workload.
// Every figure below is derived by hand in the test from the published architectures.
#include "gputwin/models/activation_memory.hpp"
#include "gputwin/models/flops.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/layer_shape.hpp"
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/op_vocabulary.hpp"
#include "gputwin/models/parameter_count.hpp"
#include "gputwin/models/rank_layout.hpp"
#include "gputwin/models/workload.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace gputwin {
namespace {

const GptConfig& catalog_model(const std::string& name)
{
  const CatalogEntry* e = find_catalog_model(name);
  if (e == nullptr)
    throw std::runtime_error("no catalog model " + name);
  return e->model;
}

// The published architectures (Grattafiori et al. 2024, Table 3): 8B, 70B, 405B.
TEST(LlamaArchitecture, CatalogueHoldsThePublishedShapes)
{
  const GptConfig& m = catalog_model("llama3-70b");
  EXPECT_EQ(m.hidden, 8192);
  EXPECT_EQ(m.heads, 64);
  EXPECT_EQ(m.kv_heads(), 8);
  EXPECT_EQ(m.layers, 80);
  EXPECT_EQ(m.ffn(), 28672);
  EXPECT_EQ(m.seq_len, 8192);
  EXPECT_EQ(m.vocab, 128256);
  EXPECT_EQ(m.activation, Activation::SwiGlu);
  EXPECT_EQ(m.norm, Norm::RmsNorm);
  EXPECT_EQ(m.position, PositionEmbedding::Rope);
  EXPECT_FALSE(m.tie_embeddings);
  EXPECT_FALSE(m.bias);
  EXPECT_FALSE(m.dropout);
  EXPECT_EQ(catalog_model("llama3-405b").layers, 126);
  EXPECT_EQ(catalog_model("llama3-405b").ffn(), 53248);
  EXPECT_EQ(catalog_model("llama3-8b").ffn(), 14336);
}

// One layer of Llama 3 70B: Q and O 8192^2 each, K and V 8192 x 1024 each, gate/up/down 3 x 8192 x 28672,
// two RMSNorm gains of 8192: 855,654,400. The model: 80 layers + embedding and untied output 2 x 128256 x 8192
// + final norm 8192 = 70,553,706,496, the "70B"'s 70.6 B.
TEST(LlamaArchitecture, ParameterCountsOfThePublishedModels)
{
  const GptConfig& m70 = catalog_model("llama3-70b");
  const int64_t h = 8192, kv = 1024, f = 28672;
  const int64_t layer = h * h * 2 + h * kv * 2 + 3 * h * f + 2 * h;
  EXPECT_EQ(layer_parameters(m70), layer);
  EXPECT_EQ(layer, 855654400);
  const int64_t total = 80 * layer + 2 * 128256 * h + h;
  EXPECT_EQ(model_parameters(m70, 1), total);
  EXPECT_NEAR(static_cast<double>(model_parameters(m70, 1)), 70.6e9, 0.01 * 70.6e9);
  EXPECT_NEAR(static_cast<double>(model_parameters(catalog_model("llama3-8b"), 1)), 8.03e9, 0.01 * 8.03e9);
  EXPECT_NEAR(static_cast<double>(model_parameters(catalog_model("llama3-405b"), 1)), 405.9e9, 0.01 * 405.9e9);
  // Per TP rank: every linear split by t, the norms replicated.
  EXPECT_EQ(layer_parameters_per_gpu(m70, 8), (layer - 2 * h) / 8 + 2 * h);
}

// The paper's GPT is unchanged by the generalisation: 12 h^2 + 13 h per layer, (12 h^2 + 7 h)/t + 6 h per rank.
TEST(LlamaArchitecture, GptCountsAreUnchanged)
{
  const GptConfig gpt{"g", 1024, 16, 8, 512, 51200};
  const int64_t h = 1024;
  EXPECT_EQ(layer_parameters(gpt), 12 * h * h + 13 * h);
  EXPECT_EQ(layer_parameters_per_gpu(gpt, 4), (12 * h * h + 7 * h) / 4 + 6 * h);
  EXPECT_DOUBLE_EQ(layer_forward_flops(gpt, 2), 24.0 * 2 * 512 * h * h + 4.0 * 2 * 512.0 * 512 * h);
}

// Forward FLOPs of a Llama layer: 2 s (h (h + 2 g d) + h^2 + 2 h F + F h) per sample + 4 s^2 h.
TEST(LlamaArchitecture, LayerFlopsFollowGqaAndSwiglu)
{
  const GptConfig& m = catalog_model("llama3-70b");
  const double s = 8192, h = 8192, kv = 1024, f = 28672;
  const double expected = 2 * s * (h * (h + 2 * kv) + h * h + 2 * h * f + f * h) + 4 * s * s * h;
  EXPECT_DOUBLE_EQ(layer_forward_flops(m, 1), expected);
}

// The check: llama3-70b, tp 8, pp 4, cp 2, micro-batch 1, SP, flash. Per rank s = 8192 / 2 = 4096
// tokens; bf16 (2 bytes):
//   outside the TP regions (sharded by SP): 2 RMSNorm inputs + 2 norm outputs (the QKV and fc1 inputs)
//     = 8 s b h, no dropout masks;
//   inside (split by t): Q 2 s b h, K and V 2 x 2 s b g d, the attention output 2 s b h, fc1's gate+up output
//     2 s b 2F, the SwiGLU output 2 s b F, and flash's fp32 log-sum-exp 4 a s b; no RNG state (no dropout).
TEST(LlamaArchitecture, ActivationBytesByHandForSeventyBWithContextParallelism)
{
  const GptConfig& m = catalog_model("llama3-70b");
  ParallelPlan p;
  p.tp = 8;
  p.pp = 4;
  p.cp = 2;
  p.micro_batch = 1;
  p.tp_comm = TpComm::SequenceParallel;
  p.attention = AttentionKernel::Flash;
  validate_plan(m, p);
  const int64_t s = 4096, b = 1, h = 8192, kv = 1024, f = 28672, a = 64, t = 8;
  const int64_t outside = (8 * s * b * h + 2 * 4 * s * b) / t; // + TE's RMSNorm rsigma, fp32 per token, twice
  const int64_t inside = (2 * s * b * h + 4 * s * b * kv + 2 * s * b * h + 2 * s * b * 2 * f + 2 * s * b * f +
                          4 * a * s * b) /
                         t;
  EXPECT_EQ(activation_bytes_per_layer(m, p), outside + inside);
  EXPECT_EQ(activation_bytes_per_layer(m, p), 140644352);
  // Halving the sequence per rank halves the activations (all terms are linear in s with flash).
  ParallelPlan no_cp = p;
  no_cp.cp = 1;
  EXPECT_EQ(activation_bytes_per_layer(m, no_cp), 2 * activation_bytes_per_layer(m, p));
}

// Dropout masks and the RNG state exist only with dropout; RMSNorm and learned positions change nothing stored.
TEST(LlamaArchitecture, DropoutOnlyAddsItsMasks)
{
  GptConfig gpt{"g", 1024, 16, 8, 512, 51200};
  ParallelPlan p;
  p.tp = 2;
  p.tp_comm = TpComm::SequenceParallel;
  p.recompute = Recompute::Selective;
  GptConfig no_dropout = gpt;
  no_dropout.dropout = false;
  const int64_t sbh = 512 * 1024;
  EXPECT_EQ(activation_bytes_per_layer(gpt, p) - activation_bytes_per_layer(no_dropout, p), 2 * sbh / 2);
}

TEST(LlamaArchitecture, BadArchitecturesAndPlansNameTheirFlag)
{
  auto expect_error = [](GptConfig m, ParallelPlan p, const std::string& flag) {
    try {
      validate_plan(m, p);
      ADD_FAILURE() << "expected an error naming " << flag;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(flag, 0), 0u) << e.what();
    }
  };
  GptConfig m = catalog_model("llama3-8b");
  ParallelPlan p;
  p.attention = AttentionKernel::Flash;
  GptConfig groups = m;
  groups.query_groups = 5; // 32 heads not divisible by 5
  expect_error(groups, p, "--num-query-groups");
  ParallelPlan tp16 = p;
  tp16.tp = 16; // 32 heads divide, 8 groups do not
  expect_error(m, tp16, "--tp");
  ParallelPlan cp = p;
  cp.cp = 3; // 8192 not divisible by 2 x 3
  expect_error(m, cp, "--cp");
  ParallelPlan cp_unfused = p;
  cp_unfused.cp = 2;
  cp_unfused.attention = AttentionKernel::Unfused;
  expect_error(m, cp_unfused, "--cp");
  ParallelPlan uneven = p;
  uneven.pp = 4;
  uneven.pp_first_stage_layers = 5; // 32 - 5 - 5 = 22 layers over the 2 middle stages: 11 each
  uneven.pp_last_stage_layers = 5;
  validate_plan(m, uneven);
  uneven.pp_last_stage_layers = 6; // 21 over 2 stages
  expect_error(m, uneven, "--pp-first-stage-layers");
}

// Llama 3 405B's 126 layers on 16 stages, first and last one layer lighter: 7, 14 x 8, 7.
TEST(LlamaArchitecture, UnevenStagesSplitTheLayers)
{
  const GptConfig& m = catalog_model("llama3-405b");
  ParallelPlan p;
  p.pp = 16;
  p.pp_first_stage_layers = 7;
  p.pp_last_stage_layers = 7;
  p.attention = AttentionKernel::Flash;
  validate_plan(m, p);
  int64_t total = 0;
  for (int64_t stage = 0; stage < 16; ++stage) {
    EXPECT_EQ(stage_layers(m, p, stage), stage == 0 || stage == 15 ? 7 : 8) << stage;
    EXPECT_EQ(stage_first_layer(m, p, stage), total);
    total += stage_layers(m, p, stage);
  }
  EXPECT_EQ(total, 126);
  // The generated programs hold exactly their stage's layers.
  p.global_batch = 16;
  const Workload w = make_workload(m, p);
  for (const int64_t stage : {int64_t{0}, int64_t{1}, int64_t{15}}) {
    const traces::RankProgram prog = stage_program(w, stage);
    std::map<int32_t, int> layers;
    for (const traces::Op& op : prog.ops)
      if (op.name == "qkv.fwd")
        ++layers[op.layer];
    EXPECT_EQ(static_cast<int64_t>(layers.size()), stage_layers(m, p, stage)) << stage;
    EXPECT_EQ(layers.begin()->first, stage_first_layer(m, p, stage));
  }
}

// Ranks: tp innermost, then cp, then dp, then pp; the dp gradient group spans dp x cp.
TEST(LlamaArchitecture, RankLayoutPutsContextParallelBetweenTensorAndData)
{
  ParallelPlan p;
  p.tp = 2;
  p.cp = 3;
  p.dp = 2;
  p.pp = 2;
  for (int64_t r = 0; r < p.gpus(); ++r)
    EXPECT_EQ(global_rank(p, rank_coord(p, r)), r);
  EXPECT_EQ(global_rank(p, {1, 1, 1, 2}), 1 + 2 * (2 + 3 * (1 + 2 * 1)));
  EXPECT_EQ(cp_group_ranks(p, 0, 0, 1), (std::vector<int32_t>{1, 3, 5}));
  EXPECT_EQ(dp_group_ranks(p, 0, 0), (std::vector<int32_t>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(tp_group_ranks(p, 1, 1, 2), (std::vector<int32_t>{22, 23}));
}

// Context parallelism in the generated program: cp blockwise flash steps per layer and direction, cp - 1 ring
// exchanges of the K/V block between them (each step after the first waits for its block), and the steps'
// FLOPs summing to 1/cp of the whole sequence's causal attention.
TEST(LlamaArchitecture, ContextParallelRingInTheWorkload)
{
  GptConfig m = catalog_model("llama3-8b");
  m.layers = 2;
  ParallelPlan p;
  p.tp = 2;
  p.cp = 4;
  p.tp_comm = TpComm::SequenceParallel;
  p.attention = AttentionKernel::Flash;
  validate_plan(m, p);
  const Workload w = make_workload(m, p);
  const traces::RankProgram prog = stage_program(w, 0);
  std::map<std::string, int> count;
  std::map<std::string, double> flops, bytes;
  std::map<int64_t, const traces::Op*> by_id;
  for (const traces::Op& op : prog.ops) {
    by_id[op.id] = &op;
    if (op.layer == 0) {
      ++count[op.name];
      flops[op.name] += op.flops;
      bytes[op.name] += op.bytes;
    }
  }
  EXPECT_EQ(count["attn.flash.fwd"], 4);
  EXPECT_EQ(count["attn.flash.bwd"], 4);
  EXPECT_EQ(count["cp.kv_exchange"], 3);
  EXPECT_EQ(count["cp.kv_grad_exchange"], 3);
  // K and V of the rank's 2048 tokens, 8 groups / t = 4 per rank of 128 channels, bf16.
  const double kv_block = 2.0 * 2.0 * 2048 * 4 * 128;
  EXPECT_DOUBLE_EQ(bytes["cp.kv_exchange"], 3 * kv_block);
  EXPECT_DOUBLE_EQ(bytes["cp.kv_grad_exchange"], 3 * 2 * kv_block);
  // The whole causal attention of the 8192-token sequence, 16 query heads per rank: 2 x 2 x (s^2 / 2) x d x
  // heads, split evenly over the 4 ranks of the ring.
  const double s = 8192, d = 128, heads = 16;
  EXPECT_DOUBLE_EQ(flops["attn.flash.fwd"], 2 * 2 * (s * s / 2) * d * heads / 4);
  EXPECT_DOUBLE_EQ(flops["attn.flash.bwd"], 5 * 2 * (s * s / 2) * d * heads / 4);
  // Every exchange is a SendRecv on the stage's cp group; each flash step after the first waits for one.
  const int32_t cp_group = w.cp_group(0);
  ASSERT_GE(cp_group, 0);
  EXPECT_EQ(w.role(cp_group).kind, GroupKind::Cp);
  int waiting_steps = 0;
  for (const traces::Op& op : prog.ops) {
    if (op.name == "cp.kv_exchange") {
      EXPECT_EQ(op.collective, CollectiveOp::SendRecv);
      EXPECT_EQ(op.group, cp_group);
    }
    if (op.name == "attn.flash.fwd" && op.layer == 0)
      for (const int64_t dep : op.deps)
        waiting_steps += by_id.at(dep)->name == "cp.kv_exchange";
  }
  EXPECT_EQ(waiting_steps, 3);
}

// --overlap-param-gather (with --overlap-grad-reduce, as Megatron-Core requires): the buffer's buckets gathered on
// their own stream before the first forward, `buckets` all-gathers; the buckets cover the whole (padded) buffer;
// every layer's first forward op waits for the gather of the bucket that holds it, one of its own chunk; no
// all-gather after the optimizer step.
void expect_gather_buckets(const GptConfig& m, const ParallelPlan& p, int64_t stage, size_t buckets)
{
  SCOPED_TRACE(describe_plan(p));
  validate_plan(m, p);
  WorkloadOptions options;
  options.overlap_param_gather = true;
  options.overlap_grad_reduce = true;
  const Workload w = make_workload(m, p, options);
  const traces::RankProgram prog = stage_program(w, stage);
  std::map<int64_t, const traces::Op*> gathers;
  double gathered_bytes = 0;
  for (const traces::Op& op : prog.ops)
    if (op.name == "dp.all_gather") {
      EXPECT_NE(op.phase, traces::Phase::Optimizer);
      gathers[op.id] = &op;
      gathered_bytes += op.bytes;
    }
  EXPECT_EQ(gathers.size(), buckets);
  const int64_t params = data_parallel_buffer_elements(stage_parameters_per_gpu(m, p, stage), p.dp * p.cp);
  EXPECT_DOUBLE_EQ(gathered_bytes, 2.0 * static_cast<double>(params));
  std::set<int32_t> waiting_layers;
  std::set<int64_t> waited;
  for (const traces::Op& op : prog.ops)
    for (const int64_t dep : op.deps)
      if (gathers.count(dep)) {
        EXPECT_EQ(op.phase, traces::Phase::Forward);
        EXPECT_EQ(gathers.at(dep)->chunk, op.chunk);
        EXPECT_TRUE(waiting_layers.insert(op.layer).second || waited.count(dep) == 0) << op.layer;
        waited.insert(dep);
      }
  EXPECT_EQ(static_cast<int64_t>(waiting_layers.size()), stage_layers(m, p, stage));
  EXPECT_EQ(waited.size(), gathers.size()); // every bucket is waited for
}

TEST(LlamaArchitecture, OverlappedParameterGatherFollowsTheGradientBuckets)
{
  GptConfig m = catalog_model("llama3-8b");
  m.layers = 4;
  ParallelPlan p;
  p.dp = 4;
  p.zero_stage = 1;
  p.global_batch = 8;
  p.attention = AttentionKernel::Flash;
  // Pipeline rank 0's chunk in 40M-parameter buckets: a layer is 218M, so the output layer (525M), each layer and
  // the embedding close one each.
  expect_gather_buckets(m, p, 0, 6);
  // Interleaved with context parallelism: pipeline rank 1 keeps each chunk in one bucket, over the dp x cp ranks.
  m.layers = 8;
  p.dp = 2;
  p.cp = 2;
  p.tp = 2;
  p.tp_comm = TpComm::SequenceParallel;
  p.pp = 2;
  p.schedule = Schedule::Interleaved;
  p.chunks = 2;
  expect_gather_buckets(m, p, 1, 2);
}

// Untied embeddings: no embedding-gradient all-reduce between the first and the last stage, and the last stage
// holds the output layer's own matrix even without pipelining.
TEST(LlamaArchitecture, UntiedEmbeddingsNeedNoEmbeddingAllReduce)
{
  GptConfig m = catalog_model("llama3-8b");
  m.layers = 2;
  ParallelPlan p;
  p.pp = 2;
  p.global_batch = 2;
  p.attention = AttentionKernel::Flash;
  const Workload w = make_workload(m, p);
  for (const int64_t stage : {int64_t{0}, int64_t{1}})
    for (const traces::Op& op : stage_program(w, stage).ops)
      EXPECT_NE(op.name, "embedding.grad_all_reduce");
  ParallelPlan single;
  const int64_t word = padded_vocab(m, 1) * m.hidden;
  EXPECT_EQ(stage_parameters_per_gpu(m, single, 0), 2 * layer_parameters_per_gpu(m, 1) + 2 * word + m.hidden);
}

// A Llama layer's ops in the generator's order: rope after the QKV GEMM, SwiGLU in place of GeLU, no bias
// gradients, no dropout ops.
TEST(LlamaArchitecture, LayerOpsOfALlamaLayer)
{
  GptConfig m = catalog_model("llama3-8b");
  m.layers = 1;
  ParallelPlan p;
  p.attention = AttentionKernel::Flash;
  const Workload w = make_workload(m, p);
  std::vector<std::string> forward, backward;
  for (const traces::Op& op : stage_program(w, 0).ops)
    if (op.layer == 0)
      (op.phase == traces::Phase::Forward ? forward : backward).push_back(op.name);
  EXPECT_EQ(forward, (std::vector<std::string>{"ln1.fwd", "qkv.fwd", "rope.fwd", "attn.flash.fwd", "proj.fwd",
                                               "dropout_add.fwd", "ln2.fwd", "fc1.fwd", "swiglu.fwd", "fc2.fwd",
                                               "dropout_add.fwd"}));
  EXPECT_EQ(backward, (std::vector<std::string>{"fc2.dgrad", "fc2.wgrad", "swiglu.bwd", "fc1.dgrad", "fc1.wgrad",
                                                "ln2.bwd", "residual.bwd", "proj.dgrad", "proj.wgrad",
                                                "attn.flash.bwd", "rope.bwd", "qkv.dgrad", "qkv.wgrad", "ln1.bwd",
                                                "residual.bwd"}));
  // The QKV GEMM is (a + 2 g) d = 4096 + 2 x 1024 wide, fc1 2F = 28672.
  const LayerShape s = layer_shape(m, p);
  EXPECT_EQ(op_cost(OpName::QkvFwd, s).gemm.n, 6144);
  EXPECT_EQ(op_cost(OpName::Fc1Fwd, s).gemm.n, 28672);
  EXPECT_EQ(op_cost(OpName::Fc2Fwd, s).gemm.k, 14336);
}

} // namespace
} // namespace gputwin
