#pragma once
// THE per-rank sizes of one micro-batch under a parallel plan: what every op of a GPT rank is sized by. The
// workload generator costs its ops from it (op_vocabulary.hpp) and the engine's RankContext is built on it,
// so the two cannot size an op differently.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <cstdint>

namespace gputwin {

struct LayerShape {
  int64_t s = 0;        // tokens of a sample on this rank: the sequence / cp
  int64_t b = 0, h = 0, a = 0, t = 1;
  int64_t g = 0;        // K/V heads (query groups); g = a without grouped-query attention
  int64_t f = 0;        // MLP width F
  int64_t cp = 1;       // context-parallel ranks the sequence is split over
  int64_t vocab_per_rank = 0; // padded vocabulary / t (Megatron pads v to a multiple of 128 t)
  bool sp = false;
  AttentionKernel attention = AttentionKernel::Unfused;
  Activation activation = Activation::Gelu;
  Norm norm = Norm::LayerNorm;
  PositionEmbedding position = PositionEmbedding::Learned;
  bool bias = true;
  bool dropout = true;
  GemmPrecision precision = GemmPrecision::Bf16; // the linear layers' GEMMs (ParallelPlan::precision)
  bool current_scaling = false;                   // FP8 tensorwise scaling: an amax pass before each cast
  // Mixture of experts (a MoE layer's expert block; zero for a dense model): E experts, E/ep on this rank, top-k,
  // one expert's MLP width on this rank F_e/etp, and `expert_load`: the busiest EP rank's routed tokens over the
  // balanced share in the layer being emitted (1: balanced; capped by the capacity factor) -- the folded program
  // computes at the pace of the slowest EP rank, whose all-to-all peers wait for it.
  int64_t experts = 0, experts_per_rank = 0, topk = 0, f_expert = 0, etp = 1, ep = 1;
  int64_t f_shared = 0; // the shared experts' total width F_s (a dense TP MLP of that width; 0: none)
  bool gated_experts = false; // SwiGLU experts: fc1 makes gate and up
  MoeDispatcher dispatcher = MoeDispatcher::AllToAll;
  // --moe-shared-expert-overlap: the shared experts' kernels run while the token exchanges move (layer_ops.cpp).
  bool shared_expert_overlap = false;
  bool moe_layer = false;  // the layer being emitted has a MoE MLP
  double expert_load = 1.0;

  int64_t tokens() const { return s * b; }                             // T = s b (this rank's sequence share)
  int64_t tokens_outside_tp() const { return sp ? s * b / t : s * b; } // sharded by SP outside the TP regions
  int64_t seq_outside_tp() const { return sp ? s / t : s; }             // rows of the residual stream per sample
  int64_t seq_full() const { return s * cp; }                           // the whole sequence (K/V length)
  // Multi-head latent attention (moe_config.hpp MlaConfig; 0 without): the query/key head width d_nope + d_rope, the
  // value head width, the LoRA ranks and the rotary width. The attention core is costed at the mean head width
  // (d_qk + d_v)/2, which gives its FLOPs exactly (Q K^T at d_qk, P V at d_v); the projections are emitted as
  // Megatron-Core runs them, four GEMMs and two norms (op_vocabulary.hpp Mla*, 2026-11-29; until then one h-deep
  // GEMM of the same FLOPs, qkv_per_rank, which timed the 512-deep key-value up projection at the efficiency of an
  // h-deep one).
  int64_t mla_qk = 0, mla_v = 0, mla_q_lora = 0, mla_kv_lora = 0, mla_rope = 0;

  int64_t dh = 0; // a head's width when the model sets it (GptConfig::head_size); 0: h / a

  int64_t head_dim() const { return mla_qk > 0 ? (mla_qk + mla_v) / 2 : (dh > 0 ? dh : h / a); }
  int64_t heads_per_rank() const { return a / t; }
  int64_t kv_heads_per_rank() const { return g / t; }
  // Attention (query) width of one rank: the attention output projection's input; MLA: heads x d_v; a head size
  // other than h / a: heads x d.
  int64_t hidden_per_rank() const
  {
    return mla_qk > 0 ? heads_per_rank() * mla_v : (dh > 0 ? heads_per_rank() * dh : h / t);
  }
  int64_t kv_per_rank() const { return kv_heads_per_rank() * head_dim(); } // width of K (and V) of one rank
  // QKV GEMM output width; MLA (whose layers emit the Mla* ops instead): the width of one h-deep GEMM with the FLOPs
  // of its down projections (replicated on every TP rank, Megatron-Core's "duplicated" linear_q/kv_down_proj) and
  // its up projections (split by t).
  int64_t qkv_per_rank() const
  {
    if (mla_qk == 0)
      return hidden_per_rank() + 2 * kv_per_rank();
    const int64_t down = mla_q_lora + mla_kv_lora + mla_rope;
    const int64_t up = (mla_q_lora > 0 ? mla_q_lora : h) * heads_per_rank() * mla_qk +
                       mla_kv_lora * heads_per_rank() * (mla_qk - mla_rope + mla_v);
    return (mla_q_lora > 0 ? down : mla_kv_lora + mla_rope) + (up + h - 1) / h;
  }
  int64_t ffn_per_rank() const { return f / t; }                        // MLP width of one rank
  int64_t fc1_per_rank() const { return activation == Activation::SwiGlu ? 2 * f / t : f / t; }
  // Routed token copies the rank's experts take per micro-batch, balanced: its tokens outside the TP regions x k,
  // times etp (the expert-TP group gathers its ranks' tokens); the busiest EP rank's is that x expert_load.
  int64_t routed_tokens() const { return tokens_outside_tp() * topk * etp; }
  double expert_tokens() const { return static_cast<double>(routed_tokens()) * expert_load; }
  int64_t expert_fc1_per_rank() const { return gated_experts ? 2 * f_expert : f_expert; }
};

LayerShape layer_shape(const GptConfig& model, const ParallelPlan& plan);

} // namespace gputwin
