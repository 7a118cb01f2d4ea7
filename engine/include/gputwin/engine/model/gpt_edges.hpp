#pragma once
// The two ends of the GPT: the vocabulary-parallel word embedding plus learned position embedding (none with
// RoPE) on the first stage, and the final norm, tied (or untied) output layer and fused vocabulary-parallel cross-entropy on the
// last (Shoeybi et al. 2019, Section 3: the embedding is split along the vocabulary and the loss is fused with
// the parallel logits so only b s values per reduction cross ranks, not b s v).

#include "gputwin/engine/model/norm.hpp"
#include "gputwin/engine/model/parameter_store.hpp"

namespace gputwin::engine {

// What the embedding keeps for backward (EdgeActivations): token ids and the embedding-dropout mask.
struct EmbeddingSaved {
  Tensor tokens;       // (s, b) i32
  Tensor dropout_mask; // (s_l, b, h) u8: s b h (/t with SP) bytes, paper Section 4.2.3 (with dropout only)
};

class GptEmbedding {
public:
  GptEmbedding(RankContext& ctx, ParameterStore& store);

  // tokens (s, b) i32 -> x (s_l, b, h) bf16 = dropout(word[tokens] + position[i]); the word lookup's partial
  // sums (tp rank 0's with the positions added) are all-reduced (reduce-scattered with SP) over the tp group.
  Tensor forward(Tensor tokens, int64_t micro_batch, EmbeddingSaved& saved);
  // Accumulates the word and position embedding gradients from d_x (s_l, b, h) f32; frees `saved`.
  void backward(const Tensor& d_x, EmbeddingSaved& saved);

  Parameter& word() { return *word_; }

private:
  // (rows, b) i32: the positions first, first + 1, ... of `rows` rows of the sequence.
  Tensor position_ids(int64_t first, int64_t rows) const;

  RankContext& ctx_;
  Parameter* word_;
  Parameter* position_; // learned positions only
};

// What the output layer keeps for backward (EdgeActivations).
struct OutputSaved {
  Tensor y;       // (s_l, b, h) bf16 final layernorm input
  Tensor ln;      // (s_l, b, h) bf16 final layernorm output = output-layer input (shard with SP)
  Tensor logits;  // (s b, v/t) f32
  Tensor targets; // (s, b) i32
  Tensor row_max; // (s b) f32, all-reduced
  Tensor sum_exp; // (s b) f32, all-reduced
};

class GptOutput {
public:
  // `word` is the output layer's weight: the tied word embedding (the embedding's own parameter with pp = 1, the
  // last stage's copy otherwise, kept equal by an all-reduce of its gradient over the embedding group), or the
  // untied output matrix.
  GptOutput(RankContext& ctx, ParameterStore& store, Parameter& word);

  // y (s_l, b, h) -> the mean cross-entropy of the micro-batch's s b tokens (the same on every tp rank).
  double forward(Tensor y, Tensor targets, OutputSaved& saved);
  // d_y (s_l, b, h) f32 of loss_scale x the micro-batch's mean loss; accumulates the output layer's and the
  // final layernorm's gradients; frees `saved`.
  Tensor backward(OutputSaved& saved, float loss_scale);

private:
  RankContext& ctx_;
  Parameter& word_;
  NormParameters norm_; // the final norm
};

} // namespace gputwin::engine
