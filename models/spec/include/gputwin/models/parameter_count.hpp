#pragma once
// Parameter counts of a decoder-only transformer (pre-norm layers; the paper's GPT: learned position embedding,
// output layer tied to the word embedding), whole and per GPU under tensor and pipeline parallelism.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <cstdint>

namespace gputwin {

// Megatron-LM pads the vocabulary to a multiple of 128 x tp so the vocabulary-parallel embedding splits
// evenly (`--make-vocab-size-divisible-by 128`). 51200 stays 51200 for tp <= 8.
int64_t padded_vocab(const GptConfig& model, int64_t tp);

// One transformer layer: QKV h (h + 2 g d) + biases, attention output h^2 + h, MLP h F' + F' and F h + h (F' = F,
// or 2F for SwiGLU's gate and up projections), two norms (2h LayerNorm, h RMSNorm each). The paper's GPT
// (g = a, F = 4h, GeLU, LayerNorm, biases): 12h^2 + 13h (Narayanan et al. 2021, Eq. 2 keeps the 12h^2 term).
// Llama 3 70B (h 8192, a 64, g 8, F 28672, SwiGLU, RMSNorm, no biases): 855.6 M.
int64_t layer_parameters(const GptConfig& model);

// The whole model: L layers + word embedding (padded vocab x h) + the output layer's own matrix when the
// embeddings are untied + position embedding (s x h, learned positions only) + final norm.
int64_t model_parameters(const GptConfig& model, int64_t tp);

// One layer's parameters on one tensor-parallel rank: the column-parallel QKV and first MLP linear (weights
// and biases) and the row-parallel attention-output and second MLP linear (weights) are split by t; the
// row-parallel biases and the norms are replicated. GPT: (12h^2 + 7h)/t + 6h.
int64_t layer_parameters_per_gpu(const GptConfig& model, int64_t tp);

// Parameters held by one GPU of pipeline stage `stage`: its layers (stage_layers); the vocabulary-parallel word
// embedding (V/t x h) and the learned position embedding on the first stage; the final norm on the last stage,
// and there the output layer's matrix: the tied copy of the word embedding when p > 1, or its own when untied.
int64_t stage_parameters_per_gpu(const GptConfig& model, const ParallelPlan& plan, int64_t stage);
// Elements of the flat gradient (and weight) buffer of `parameters`: padded to a multiple of dp so that
// ZeRO-1 splits it evenly (the engine's buffer; the generator's data-parallel and optimizer sizes).
inline int64_t data_parallel_buffer_elements(int64_t parameters, int64_t dp)
{
  return (parameters + dp - 1) / dp * dp;
}
// Parameters of `stage` that sequence parallelism leaves partial on each TP rank, their gradients summed over
// the TP group before the optimizer: the norms, the row-parallel biases, the learned position embedding.
int64_t sp_partial_parameters(const GptConfig& model, const ParallelPlan& plan, int64_t stage);

} // namespace gputwin
