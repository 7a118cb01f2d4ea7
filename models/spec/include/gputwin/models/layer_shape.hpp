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
  bool fp8 = false;
  // Mixture of experts (a MoE layer's expert block; zero for a dense model): E experts, E/ep on this rank, top-k,
  // one expert's MLP width on this rank F_e/etp, and `expert_load`: the busiest EP rank's routed tokens over the
  // balanced share in the layer being emitted (1: balanced; capped by the capacity factor) -- the folded program
  // computes at the pace of the slowest EP rank, whose all-to-all peers wait for it.
  int64_t experts = 0, experts_per_rank = 0, topk = 0, f_expert = 0, etp = 1, ep = 1;
  int64_t f_shared = 0; // shared experts' width on this rank (F_s / t)
  bool gated_experts = false; // SwiGLU experts: fc1 makes gate and up
  double expert_load = 1.0;

  int64_t tokens() const { return s * b; }                             // T = s b (this rank's sequence share)
  int64_t tokens_outside_tp() const { return sp ? s * b / t : s * b; } // sharded by SP outside the TP regions
  int64_t seq_outside_tp() const { return sp ? s / t : s; }             // rows of the residual stream per sample
  int64_t seq_full() const { return s * cp; }                           // the whole sequence (K/V length)
  int64_t head_dim() const { return h / a; }
  int64_t heads_per_rank() const { return a / t; }
  int64_t kv_heads_per_rank() const { return g / t; }
  int64_t hidden_per_rank() const { return h / t; }                    // attention (query) width of one rank
  int64_t kv_per_rank() const { return kv_heads_per_rank() * head_dim(); } // width of K (and V) of one rank
  int64_t qkv_per_rank() const { return hidden_per_rank() + 2 * kv_per_rank(); } // QKV GEMM output width
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
