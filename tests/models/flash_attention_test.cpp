// `--attention flash` in the models: the per-layer activation bytes derived by hand from Table 2's accounting
// (Korthikanti et al. 2022, Section 4.1) with the attention core replaced by FlashAttention-2's stored state,
// the workload's fused ops (count, FLOPs, bytes, no recompute), and the hardware FLOPs.
#include "gputwin/models/activation_memory.hpp"
#include "gputwin/models/flash_attention_cost.hpp"
#include "gputwin/models/flops.hpp"
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/workload.hpp"

#include <gtest/gtest.h>

#include <map>

namespace gputwin {
namespace {

// Table 2's attention block, 11 sbh + 5 a s^2 b, item by item, and what flash keeps of each (bytes, t = 1):
//   QKV input (LN1 output)           2 sbh   kept (outside the TP region)
//   Q and K                          4 sbh   kept (the fused backward reads them)
//   softmax output                   2 as^2b gone
//   softmax-dropout mask             as^2b   gone; the RNG state (16 bytes) instead
//   dropout output                   2 as^2b gone
//   V                                2 sbh   kept
//   output-projection input          2 sbh   kept: it is the kernel's output O, which its backward reads too
//   attention-output dropout mask    sbh     kept (outside)
//   new: log-sum-exp, fp32 per (b, head, s)  4 a s b
// MLP 19 sbh and the layernorm inputs 4 sbh are unchanged. Outside the TP region (replicated under TP,
// sharded by SP): LN1/LN2 inputs 4 sbh, their outputs 4 sbh, the two dropout masks 2 sbh = 10 sbh; inside
// (split by t): Q K V 6, projection input 2, GeLU input 8, GeLU output 8 = 24 sbh, and the core's state.
// Flash is counted as Megatron-Core + TE keep it, whose two LayerNormLinear modules also save each norm's fp32
// mu and rsigma per token (transformer_engine/pytorch/module/layernorm_linear.py): 2 x 8 s b, outside.
int64_t flash_bytes_by_hand(int64_t s, int64_t b, int64_t h, int64_t a, int64_t t, bool sp)
{
  const int64_t sbh = s * b * h;
  const int64_t outside = (10 * sbh + 2 * 8 * s * b) / (sp ? t : 1);
  const int64_t inside = 24 * sbh / t;
  const int64_t lse = 4 * a * s * b / t; // heads split by t under TP and TP + SP alike
  const int64_t rng_state = 16;         // FlashAttention's (seed, offset), per rank
  return outside + inside + lse + rng_state;
}

ParallelPlan paper_plan(const char* name)
{
  return find_catalog_model(name)->paper_plan;
}

TEST(FlashAttentionMemory, Gpt3PaperPlanSequenceParallelSelectiveByHand)
{
  const GptConfig& m = find_catalog_model("gpt3-175b")->model;
  ParallelPlan plan = paper_plan("gpt3-175b");
  plan.tp_comm = TpComm::SequenceParallel;
  plan.recompute = Recompute::Selective;
  plan.attention = AttentionKernel::Flash;
  validate_plan(m, plan);
  // s 2048, b 1, h 12288, a 96, t 8: 34 x 25165824 / 8 + 4 x 96 x 2048 / 8 + 16 + 2 x 8 x 2048 / 8.
  EXPECT_EQ(activation_bytes_per_layer(m, plan), 106954752 + 98304 + 16 + 4096);
  EXPECT_EQ(activation_bytes_per_layer(m, plan), flash_bytes_by_hand(2048, 1, 12288, 96, 8, true));
  // Selective recompute has nothing s x s to drop: the same as no recompute, and no workspace.
  ParallelPlan none = plan;
  none.recompute = Recompute::None;
  EXPECT_EQ(activation_bytes_per_layer(m, none), activation_bytes_per_layer(m, plan));
  EXPECT_EQ(recompute_workspace_bytes(m, plan), 0);
  // The memory report carries it through: 124 layers in flight on stage 0, as unfused.
  const StageMemory stage = busiest_stage_memory(m, plan);
  EXPECT_EQ(stage.activations.bytes_per_layer, 107057168);
  EXPECT_EQ(stage.activations.layer_bytes, 107057168LL * 124);
  EXPECT_EQ(stage.recompute_workspace_bytes, 0);
}

TEST(FlashAttentionMemory, EveryPlanRowByHand)
{
  for (const char* name : {"gpt-22b", "gpt3-175b", "mt-nlg-530b", "gpt-1t"}) {
    const GptConfig& m = find_catalog_model(name)->model;
    const int64_t s = m.seq_len, h = m.hidden, a = m.heads;
    for (const int64_t t : {int64_t{1}, int64_t{2}, int64_t{8}})
      for (const bool sp : {false, true})
        for (const Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
          ParallelPlan plan;
          plan.tp = t;
          plan.micro_batch = 2;
          plan.tp_comm = sp ? TpComm::SequenceParallel : TpComm::AllReduce;
          plan.recompute = r;
          plan.attention = AttentionKernel::Flash;
          const bool sharded = sp && t > 1;
          const int64_t expected = r == Recompute::Full ? 2 * s * 2 * h / (sharded ? t : 1)
                                                        : flash_bytes_by_hand(s, 2, h, a, t, sharded);
          EXPECT_EQ(activation_bytes_per_layer(m, plan), expected)
              << name << " t " << t << (sp ? " SP " : " ") << to_string(r);
          // Full recompute rebuilds the whole flash layer in backward.
          if (r == Recompute::Full) {
            ParallelPlan stored = plan;
            stored.recompute = Recompute::None;
            EXPECT_EQ(recompute_workspace_bytes(m, plan), activation_bytes_per_layer(m, stored)) << name;
          }
        }
  }
}

TEST(FlashAttentionMemory, SavesTheFiveAsOverHTerm)
{
  // The 5 a s^2 b of Table 2 becomes 4 a s b + 16: for GPT-3 (5 a s / h = 80) with TP + SP, 34 + 80 -> 34.0037
  // in units of s b h / t.
  const GptConfig& m = find_catalog_model("gpt3-175b")->model;
  ParallelPlan plan = paper_plan("gpt3-175b");
  plan.tp_comm = TpComm::SequenceParallel;
  const int64_t unfused = activation_bytes_per_layer(m, plan);
  plan.attention = AttentionKernel::Flash;
  const int64_t flash = activation_bytes_per_layer(m, plan);
  const int64_t sbh_over_t = 2048 * 12288 / 8;
  EXPECT_EQ(unfused, sbh_over_t * (34 + 80));
  EXPECT_EQ(flash, sbh_over_t * 34 + 4 * 96 * 2048 / 8 + 16 + 2 * 8 * 2048 / 8); // + TE's norm statistics
}

TEST(FlashAttentionCost, CausalTilesFlopsAndBytes)
{
  // s = 2048 with 128-token tiles: 16 x 17 / 2 = 136 of 256 tiles computed.
  EXPECT_DOUBLE_EQ(causal_tile_fraction(2048, 128), 136.0 / 256.0);
  EXPECT_DOUBLE_EQ(causal_tile_fraction(100, 128), 1.0); // one diagonal tile
  EXPECT_DOUBLE_EQ(causal_tile_fraction(16, 8), 3.0 / 4.0);
  const int64_t bh = 12, s = 2048, d = 128;
  const FusedAttentionCost fwd = flash_attention_forward_cost(bh, s, d);
  const FusedAttentionCost bwd = flash_attention_backward_cost(bh, s, d);
  EXPECT_DOUBLE_EQ(fwd.flops, 4.0 * bh * s * s * d * 136 / 256); // Q K^T and P V over the causal tiles
  EXPECT_DOUBLE_EQ(bwd.flops / fwd.flops, 2.5);                   // + the recomputed Q K^T
  // Bytes linear in s: Q K V O and the LSE forward; no s x s term.
  EXPECT_DOUBLE_EQ(fwd.bytes, bh * (8.0 * s * d + 4.0 * s));
  EXPECT_DOUBLE_EQ(bwd.bytes, bh * (26.0 * s * d + 12.0 * s));
  EXPECT_EQ(fwd.shape, (traces::GemmShape{s, d, s, bh}));
}

GptConfig small_model()
{
  return GptConfig{"small", 1024, 16, 8, 512, 51200};
}

ParallelPlan small_plan(Recompute r, AttentionKernel k)
{
  ParallelPlan p;
  p.tp = 4;
  p.pp = 2;
  p.dp = 2;
  p.global_batch = 8;
  p.tp_comm = TpComm::SequenceParallel;
  p.recompute = r;
  p.attention = k;
  validate_plan(small_model(), p);
  return p;
}

// Op names of layer 3, micro-batch 0, by phase.
std::map<std::string, int> layer_ops(const ParallelPlan& plan, traces::Phase phase)
{
  const traces::RankProgram program = stage_program(make_workload(small_model(), plan), 1);
  std::map<std::string, int> count;
  for (const auto& op : program.ops)
    if (op.kind == traces::OpKind::Compute && op.layer == 7 && op.micro_batch == 0 && op.phase == phase)
      ++count[op.name];
  return count;
}

TEST(FlashAttentionWorkload, OneFusedOpEachWayAndNoSelectiveRecompute)
{
  for (const Recompute r : {Recompute::None, Recompute::Selective}) {
    const ParallelPlan plan = small_plan(r, AttentionKernel::Flash);
    const std::map<std::string, int> fwd = layer_ops(plan, traces::Phase::Forward);
    const std::map<std::string, int> bwd = layer_ops(plan, traces::Phase::Backward);
    EXPECT_EQ(fwd.at("attn.flash.fwd"), 1);
    EXPECT_EQ(bwd.at("attn.flash.bwd"), 1);
    for (const auto& [name, n] : fwd)
      EXPECT_EQ(name.rfind("attn.", 0) != 0 || name == "attn.flash.fwd", true) << name;
    for (const auto& [name, n] : bwd)
      EXPECT_EQ(name.rfind("attn.", 0) != 0 || name == "attn.flash.bwd", true) << name;
    EXPECT_TRUE(layer_ops(plan, traces::Phase::Recompute).empty()) << to_string(r);
  }
  // Unfused selective recompute still reruns its four attention-core ops.
  EXPECT_EQ(layer_ops(small_plan(Recompute::Selective, AttentionKernel::Unfused), traces::Phase::Recompute).size(), 4u);
  // Full recompute reruns the fused forward among the layer's forward ops.
  EXPECT_EQ(layer_ops(small_plan(Recompute::Full, AttentionKernel::Flash), traces::Phase::Recompute).at("attn.flash.fwd"),
            1);
}

TEST(FlashAttentionWorkload, FusedOpsCarryTheTiledCost)
{
  const ParallelPlan plan = small_plan(Recompute::Selective, AttentionKernel::Flash);
  const traces::RankProgram program = stage_program(make_workload(small_model(), plan), 0);
  // b 1, a / t = 4 heads, s 512, d 64, 128-token tiles: 4 x 5 / 2 = 10 of 16 tiles.
  const double bh = 4, s = 512, d = 64, fraction = 10.0 / 16.0;
  int forwards = 0, backwards = 0;
  for (const auto& op : program.ops) {
    if (op.name == "attn.flash.fwd") {
      ++forwards;
      EXPECT_DOUBLE_EQ(op.flops, 4 * bh * s * s * d * fraction);
      EXPECT_DOUBLE_EQ(op.bytes, bh * (8 * s * d + 4 * s));
      EXPECT_EQ(op.gemm, (traces::GemmShape{512, 64, 512, 4}));
    } else if (op.name == "attn.flash.bwd") {
      ++backwards;
      EXPECT_DOUBLE_EQ(op.flops, 10 * bh * s * s * d * fraction);
      EXPECT_EQ(op.gemm, (traces::GemmShape{512, 64, 512, 4}));
    }
  }
  // Stage 0 of 2 holds 4 layers, 4 micro-batches per replica.
  EXPECT_EQ(forwards, 4 * 4);
  EXPECT_EQ(backwards, 4 * 4);
  EXPECT_EQ(make_workload(small_model(), plan).plan.attention, AttentionKernel::Flash);
  EXPECT_EQ(workload_graph(make_workload(small_model(), plan)).metadata.at("attention"), "flash");
}

TEST(FlashAttentionFlops, ModelFlopsUnchangedHardwareFlopsCountTheCausalTilesExecuted)
{
  const GptConfig& m = find_catalog_model("gpt3-175b")->model;
  const double B = 64, L = 96, s = 2048, h = 12288, v = 51200;
  const double model = model_flops_per_iteration(m, 64);
  EXPECT_DOUBLE_EQ(model, 72 * B * L * s * h * h * (1 + s / (6 * h) + v / (12 * h * L)));
  // 16 tiles of 128 tokens: 16 x 17 / 2 of 256 computed.
  const double f = 16.0 * 17.0 / (2.0 * 256.0);
  for (const Recompute r : {Recompute::None, Recompute::Selective})
    EXPECT_DOUBLE_EQ(hardware_flops_per_iteration(m, 64, r, AttentionKernel::Flash),
                     model - 12 * B * L * s * s * h + 14 * B * L * s * s * h * f)
        << to_string(r);
  // Full recompute reruns every layer's forward, its attention core at the same fraction.
  EXPECT_NEAR(hardware_flops_per_iteration(m, 64, Recompute::Full, AttentionKernel::Flash),
              hardware_flops_per_iteration(m, 64, Recompute::None, AttentionKernel::Flash) +
                  L * (layer_forward_flops(m, 64) - 4 * B * s * s * h * (1 - f)),
              1e-12 * model);
  // Context parallelism: each rank's load-balanced share is exactly half of the dense scores.
  EXPECT_DOUBLE_EQ(hardware_flops_per_iteration(m, 64, Recompute::None, AttentionKernel::Flash, 4),
                   model - 12 * B * L * s * s * h + 7 * B * L * s * s * h);
  // The causal kernels execute fewer FLOPs than the dense convention counts; selective recompute's unfused
  // rerun of the core (Appendix A) more.
  EXPECT_LT(hardware_flops_per_iteration(m, 64, Recompute::None, AttentionKernel::Flash), model);
  EXPECT_GT(hardware_flops_per_iteration(m, 64, Recompute::Selective),
            hardware_flops_per_iteration(m, 64, Recompute::Selective, AttentionKernel::Flash));
}

} // namespace
} // namespace gputwin
