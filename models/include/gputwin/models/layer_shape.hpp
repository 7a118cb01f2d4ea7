#pragma once
// THE per-rank sizes of one micro-batch under a parallel plan: what every op of a GPT rank is sized by. The
// workload generator costs its ops from it (op_vocabulary.hpp) and the engine's RankContext is built on it,
// so the two cannot size an op differently.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <cstdint>

namespace gputwin {

struct LayerShape {
  int64_t s = 0, b = 0, h = 0, a = 0, t = 1;
  int64_t vocab_per_rank = 0; // padded vocabulary / t (Megatron pads v to a multiple of 128 t)
  bool sp = false;
  AttentionKernel attention = AttentionKernel::Unfused;

  int64_t tokens() const { return s * b; }                             // T = s b
  int64_t tokens_outside_tp() const { return sp ? s * b / t : s * b; } // sharded by SP outside the TP regions
  int64_t seq_outside_tp() const { return sp ? s / t : s; }             // rows of the residual stream per sample
  int64_t head_dim() const { return h / a; }
  int64_t heads_per_rank() const { return a / t; }
  int64_t hidden_per_rank() const { return h / t; }  // attention width of one rank
  int64_t ffn_per_rank() const { return 4 * h / t; } // MLP width of one rank
};

LayerShape layer_shape(const GptConfig& model, const ParallelPlan& plan);

} // namespace gputwin
