#pragma once
// Parameter counts of a decoder-only transformer (pre-norm layers; the paper's GPT: learned position embedding,
// output layer tied to the word embedding), whole and per GPU under tensor, pipeline and expert parallelism.
//
// Mixture of experts (moe_config.hpp): a MoE layer's MLP is a router h x E (replicated over TP), the shared experts
// (one MLP of the shared width, split by tp like a dense MLP) and E routed experts (each an MLP of width F_e,
// gated with SwiGLU: h 2F_e + F_e h; with biases fc1's 2F_e (or F_e) and fc2's h), held E/ep per rank and each
// split by etp. Multi-head latent attention replaces QKV and the projection (mla_attention in the .cpp:
// Megatron-Core's MLASelfAttention). DeepSeek-V3 (tp 1): 671,026,404,352 parameters without its MTP module
// (published: 671B), 37,552,282,624 activated per token (published: 37B; DeepSeek-V3 arXiv:2412.19437, Section 1).

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <cstdint>

namespace gputwin {

// Megatron-LM pads the vocabulary to a multiple of 128 x tp so the vocabulary-parallel embedding splits
// evenly (`--make-vocab-size-divisible-by 128`). 51200 stays 51200 for tp <= 8.
int64_t padded_vocab(const GptConfig& model, int64_t tp);

// A layer's parameters split into the dense part (attention, norms, a dense MLP or a MoE layer's router and shared
// experts) and the routed experts (expert: all E of them, or the E/ep of one rank; expert_activated: the top-k a
// token passes through, whole-model counts only).
struct LayerParameters {
  int64_t dense = 0;
  int64_t expert = 0;
  int64_t expert_activated = 0;
  int64_t total() const { return dense + expert; }
};

// What tensor parallelism does to a group of parameters: `split` is divided by t, `replicated` is whole on every
// TP rank.
struct SplitParameters {
  int64_t split = 0;
  int64_t replicated = 0;
};

// Transformer layer `layer` (global index) of the whole model: dense (layer_parameters) unless is_moe_layer.
LayerParameters layer_parameter_split(const GptConfig& model, int64_t layer);
// The same layer on one GPU: the dense part split by tp (replicated parts whole), the expert part E/ep experts each
// split by etp (plan.expert_tp()). REQUIRES: validate_plan passed.
LayerParameters layer_parameter_split_per_gpu(const GptConfig& model, const ParallelPlan& plan, int64_t layer);
// The input embedding on one GPU of `tp`: the word embedding's vocabulary-parallel rows (padded vocabulary / tp x h)
// and, with learned positions, the position embedding (s x h, replicated).
int64_t embedding_parameters_per_gpu(const GptConfig& model, int64_t tp);

// One dense transformer layer (for a MoE model: one of its dense layers, the MLP of width F): QKV h (h + 2 g d) + biases, attention output h^2 + h, MLP h F' + F' and F h + h (F' = F,
// or 2F for SwiGLU's gate and up projections), two norms (2h LayerNorm, h RMSNorm each). The paper's GPT
// (g = a, F = 4h, GeLU, LayerNorm, biases): 12h^2 + 13h (Narayanan et al. 2021, Eq. 2 keeps the 12h^2 term).
// Llama 3 70B (h 8192, a 64, g 8, F 28672, SwiGLU, RMSNorm, no biases): 855.6 M.
int64_t layer_parameters(const GptConfig& model);

// The whole model: L layers (dense and MoE, every routed expert) + word embedding (padded vocab x h) + the output
// layer's own matrix when the embeddings are untied + position embedding (s x h, learned positions only) + final
// norm. Multi-token-prediction modules are not included (mtp_parameters), as DeepSeek-V3's published 671B excludes
// its 14B MTP module.
int64_t model_parameters(const GptConfig& model, int64_t tp);

// Parameters a token passes through: model_parameters less the routed experts it is not routed to (E - k of each
// MoE layer). A dense model: model_parameters.
int64_t activated_parameters(const GptConfig& model, int64_t tp);

// The MTP modules' own parameters (DeepSeek-V3): each a transformer layer (a MoE layer when the model's last layer
// is one), eh_proj 2h x h and three norms; the embedding and the output layer are the model's (shared).
int64_t mtp_parameters(const GptConfig& model);

// One dense layer's parameters on one tensor-parallel rank: the column-parallel QKV and first MLP linear (weights
// and biases) and the row-parallel attention-output and second MLP linear (weights) are split by t; the
// row-parallel biases and the norms are replicated. GPT: (12h^2 + 7h)/t + 6h.
int64_t layer_parameters_per_gpu(const GptConfig& model, int64_t tp);

// Parameters held by one GPU of pipeline stage `stage`: its layers (stage_layers); the vocabulary-parallel word
// embedding (V/t x h) and the learned position embedding on the first stage; the final norm on the last stage,
// and there the output layer's matrix: the tied copy of the word embedding when p > 1, or its own when untied.
// With experts: a MoE layer's dense part and its E/ep experts split by etp (layer_parameter_split_per_gpu), and the
// MTP modules on the last stage (Megatron-Core places them there). stage_parameter_split().total().
int64_t stage_parameters_per_gpu(const GptConfig& model, const ParallelPlan& plan, int64_t stage);

// What one GPU of pipeline stage `stage` holds, split by the group that reduces its gradients: `dense` (attention,
// norms, dense MLPs, routers, shared experts, embedding, output layer, MTP projections) is replicated over the
// dp x cp ranks of its tp slice and reduced over them (GroupKind::Dp); `expert` (the E/ep routed experts of each MoE
// layer, each split by etp) is replicated over the expert data-parallel ranks (plan.expert_dp()) and reduced over
// them. A dense model: expert = 0 and dense = stage_parameters_per_gpu. REQUIRES: validate_plan passed.
struct StageParameters {
  int64_t dense = 0;
  int64_t expert = 0;
  int64_t total() const { return dense + expert; }
};
StageParameters stage_parameter_split(const GptConfig& model, const ParallelPlan& plan, int64_t stage);
// Elements of the flat gradient (and weight) buffer of `parameters`: padded to a multiple of dp so that
// ZeRO-1 splits it evenly (the engine's buffer; the generator's data-parallel and optimizer sizes).
inline int64_t data_parallel_buffer_elements(int64_t parameters, int64_t dp)
{
  return (parameters + dp - 1) / dp * dp;
}
// The units ZeRO-2/3 reduce-scatters (and ZeRO-3 gathers) one at a time on a GPU of pipeline stage `stage`, in
// parameters of that GPU's model-parallel slice: each transformer layer, the embedding, and the final norm with
// the output layer -- TorchTitan's apply_fsdp (fully_shard on tok_embeddings, on each transformer block and on
// [norm, output]) and Megatron-FSDP's unit modules (TransformerLayer, LanguageModelEmbedding; its output layer,
// not a unit, stays gathered, as TorchTitan's [norm, output] unit does from its forward to its backward).
// (MoE models run ZeRO 0 or 1 only, validate_plan: `layer` is a dense layer there.)
struct ShardedUnits {
  int64_t embedding = 0; // word embedding (V/t x h) + learned positions: stage 0 only
  int64_t layer = 0;     // one transformer layer (layer_parameters_per_gpu)
  int64_t layers = 0;    // transformer layers of the stage
  int64_t output = 0;    // the output unit's own parameters: final norm (+ the output matrix when untied), last stage
  // What the output unit gathers: its own parameters, and with tied embeddings (p = 1) the word embedding it
  // multiplies by again. Its gradient is reduce-scattered with the embedding's, after the embedding's backward.
  int64_t output_gathered = 0;
};
// REQUIRES: validate_plan passed. embedding + layers x layer + output == stage_parameters_per_gpu.
ShardedUnits sharded_units(const GptConfig& model, const ParallelPlan& plan, int64_t stage);
// The most bytes of units alive at once when the current unit and the next one (prefetched, or being
// reduce-scattered) are: the largest of embedding + layer, layer + layer (two or more layers), layer + output
// (gathered), each unit at `layer_bytes` or `other_bytes` per parameter (Megatron-FSDP: "to overlap the pre-fetch
// all-gather with computation, at least two FSDP units worth of un-sharded weight memory is required", and the
// same of gradients for the reduce-scatter; docs/user-guide/features/megatron_fsdp.md).
int64_t peak_two_unit_bytes(const ShardedUnits& units, int64_t layer_bytes, int64_t other_bytes);
// Parameters of `stage` that sequence parallelism leaves partial on each TP rank, their gradients summed over
// the TP group before the optimizer: the norms, the row-parallel biases, the learned position embedding, MLA's
// duplicated down projections and the MoE routers.
int64_t sp_partial_parameters(const GptConfig& model, const ParallelPlan& plan, int64_t stage);

} // namespace gputwin
