#pragma once
// Activation memory of a GPT under tensor, sequence, context and pipeline parallelism and activation recompute:
// Korthikanti et al. 2022, Section 4 and Table 2, generalised to Llama-style layers. 16-bit activations (2 bytes),
// 1-byte dropout masks.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <cstdint>

namespace gputwin {

// Bytes one GPU stores for backward per transformer layer and micro-batch (paper Table 2):
//   no parallelism (t = 1)          s b h (34 + 5 a s / h)
//   tensor parallel                 s b h (10 + 24/t + 5 a s / (h t))
//   tensor + sequence parallel      s b h (34/t + 5 a s / (h t))
//   TP + selective recompute        s b h (10 + 24/t)
//   TP + SP + selective recompute   s b h 34/t
//   full recompute                  2 s b h   (the layer input; 2 s b h / t with SP, whose input is sharded)
// That is with the unfused attention core (plan.attention == Unfused), the paper's.
// With plan.attention == Flash (one fused FlashAttention-2 kernel each way) the attention core stores nothing
// s x s. Table 2's attention accounting, 11 sbh + 5 a s^2 b, becomes 11 sbh + 4 a s b + 16 bytes: Q and K
// (4 sbh), V (2 sbh) and the output, which is the projection input (2 sbh), are stored as before; the softmax
// output (2 a s^2 b), its dropout mask (a s^2 b) and the dropout output (2 a s^2 b) are replaced by the fp32
// log-sum-exp of each (sample, head, query) row (4 a s b; the kernel's backward rebuilds P = exp(S - LSE))
// and the dropout RNG state (16 bytes: FlashAttention's (seed, offset) pair; backward redraws the mask):
//   no parallelism                  s b h 34 + 4 a s b + 16
//   tensor parallel                 s b h (10 + 24/t) + 4 a s b / t + 16
//   tensor + sequence parallel      s b h 34/t + 4 a s b / t + 16
//   TP (+ SP) + selective recompute the same as without recompute: the s x s tensors selective recompute
//                                   drops are never stored, and the fused backward already recomputes them
//                                   tile by tile, so selective recompute has nothing left to do (no extra
//                                   FLOPs, no workspace; the small log-sum-exp is kept rather than rerunning
//                                   the whole fused forward to save 4 a s b / t bytes)
//   full recompute                  2 s b h (2 s b h / t with SP), as unfused
// The log-sum-exp splits by t with the heads under TP and TP + SP alike (it lies inside the TP region); the
// RNG state is per rank. gpt3-175b, paper plan (t = 8, b = 1), SP + selective, flash: 34 s b h / 8 +
// 4 a s b / 8 + 16 = 106954752 + 98304 + 16 = 107053072 bytes (unfused: 106954752).
// Computed in exact integers: h and a are multiples of t, so every split is exact.
//
// Architectures generalise the table term by term; s is each rank's share of the sequence, s / cp with
// context parallelism (every stored tensor is per token, and the attention core's rows are the rank's queries):
//   outside the TP regions (split by t with SP):  4 sbh (two norm inputs; LayerNorm or RMSNorm alike)
//                                                 + 2 x 2 sbh (the two norm outputs, QKV's and fc1's inputs)
//                                                 + 2 sbh (the two residual dropout masks, with dropout only)
//   inside (split by t):                          2 s b a d (Q) + 4 s b g d (K and V of the g query groups)
//                                                 + 2 s b a d (the attention output, the projection's input)
//                                                   (a d = h unless the head size is set: Qwen3, gpt-oss)
//                                                 + 2 s b F' (fc1's output, F' = F, or 2F for SwiGLU's gate and up)
//                                                 + 2 s b F (the activation's output, fc2's input)
//                                                 + the attention core: unfused 2 a s^2 b (softmax output) + 3 a s^2 b
//                                                   (dropout mask and output, with dropout only); flash 4 a s b
//                                                   (fp32 log-sum-exp) + 16 bytes of RNG state with dropout
// The paper's GPT (g = a, F = 4h, GeLU, dropout): 10 sbh outside, 24 sbh + 5 a s^2 b inside -- Table 2. RoPE stores
// nothing (Q and K are stored rotated, as the attention consumes them). With FP8 the four linear inputs (the norm
// outputs, the attention output, the activation output) are kept as their 1-byte FP8 casts. Llama 3 70B, tp 8,
// cp 2, SP, flash: (8 sbh + 4 sbh + 4 s b 1024 + 2 s b 57344 + 2 s b 28672 + 4 a s b) / 8 at s = 4096, b = 1:
// 140640256 bytes (tests/models/llama_architecture_test.cpp derives it by hand).
//
// Two stacks. The unfused attention core is the paper's Megatron-LM, counted as above (Table 2, whose A100 tests
// it holds). Flash attention is Megatron-Core with Transformer Engine (megatron_core_te_memory), whose modules
// save, per layer (TE v2.11 transformer_engine/pytorch, Megatron-Core megatron/core):
//   TELayerNormColumnParallelLinear (QKV, fc1)  its input and the norm output (module/layernorm_linear.py:
//                                               inputmat, ln_out -- FP8: the FP8 cast only -- mu, rsigma); with SP
//                                               the local shards, ln_out re-gathered in backward
//   RoPE (TE fused)                             nothing but the frequencies (attention/rope.py FusedRoPEFunc)
//   DotProductAttention (FusedAttention)        q, k, v (rotated, contiguous), out and the fp32 softmax statistics
//                                               b a s (attention/dot_product_attention/backends.py FusedAttnFunc)
//   TERowParallelLinear (proj, fc2)             its input (module/linear.py saved_inputmat): the attention output
//                                               (the same tensor in BF16; its FP8 cast besides with FP8) and the
//                                               activation output (FP8: its cast only)
//   SwiGLU / GeLU (Megatron fused)              its input, fc1's output, 2F wide for SwiGLU
//                                               (core/fusions/fused_bias_swiglu.py)
// which is the per-layer formula above plus the norms' fp32 statistics (4 s b each, 8 with LayerNorm) and, with
// FP8, the attention output's FP8 copy (s b h). Dropout of 0 stores no mask (PyTorch returns its input).
// (For a MoE model: one of its dense layers. MLA replaces Q, K, V and the attention output by their head dims,
// a (d_nope + d_rope) for Q and K, a d_v for V and the output, and stores the q and kv latents and their norm
// outputs outside the TP region, 2 s b (2 q_lora + 2 kv_lora + d_rope).)
int64_t activation_bytes_per_layer(const GptConfig& model, const ParallelPlan& plan);

// Layer `layer` (global index): a dense layer as above, or a MoE layer whose MLP terms are replaced by the
// router's logits and fp32 probabilities (6 s b E, SP-split), the shared experts' fc1 and activation outputs (split
// by t) and, per routed token copy on the busiest rank (etp (s b / t) k x max_rank_load, the load of
// expert_loads(model, plan).max_rank_load(): 1 balanced, the capacity factor's cap included), the permuted token
// (2h, FP8 h), fc1's output 2 F_e'/etp, the activation output F_e/etp (x linear input bytes) and the expert output
// the unpermute keeps (2h). Full recompute: the layer input, as dense.
int64_t activation_bytes_per_layer(const GptConfig& model, const ParallelPlan& plan, int64_t layer,
                                   double max_rank_load);

// The all-to-all receive buffers of one MoE layer (dispatch and combine, 2h bytes per routed copy each), transient:
// 0 for a dense model.
int64_t moe_dispatch_buffer_bytes(const GptConfig& model, const ParallelPlan& plan, double max_rank_load);

// Whether `plan` is counted as Megatron-Core + Transformer Engine keep memory (flash attention) rather than as
// the paper's Megatron-LM (unfused attention, Table 2).
bool megatron_core_te_memory(const ParallelPlan& plan);

// Transient bytes of a layer's backward on top of what is stored, one micro-batch, Megatron-Core + TE only (0
// for the paper's stack): the MLP's input gradients alive together, fc2's (s b F) and the activation's
// (s b F'), BF16, split by t: 2 s b (F + F') / t.
int64_t layer_backward_workspace_bytes(const GptConfig& model, const ParallelPlan& plan);

// Transient bytes of the loss and output layer's backward (last stage), Megatron-Core + TE only: the output
// layer's BF16 weight-gradient placeholder 2 (v / t) h, its input gradient 2 s b h over the rank's sequence, and
// without --cross-entropy-fusion the BF16 gradient of the logits 2 s b v / t.
int64_t output_backward_workspace_bytes(const GptConfig& model, const ParallelPlan& plan);

// FlashAttention's dropout RNG state per layer and micro-batch, bytes: a (seed, offset) pair of int64.
inline constexpr int64_t flash_rng_state_bytes = 16;

// The transient bytes a layer's backward needs on top of what is stored, for one micro-batch: with
// selective recompute the recomputed attention core (5 a s^2 b / t), with full recompute the whole layer's
// activations rebuilt by the forward rerun (activation_bytes_per_layer without recompute); 0 without recompute,
// and 0 for selective recompute with flash attention (nothing is recomputed outside the fused backward, whose
// tiles live in on-chip memory).
int64_t recompute_workspace_bytes(const GptConfig& model, const ParallelPlan& plan);

// What a pipeline stage stores at its peak, one GPU.
struct StageActivations {
  int64_t bytes_per_layer = 0;  // Table 2, one micro-batch (MoE: the stage's layers' mean, rounded up)
  int64_t layers_per_chunk = 0; // L / (p v)
  int64_t chunks_in_flight = 0; // peak (micro-batch, chunk) pairs stored, from the schedule
  int64_t layer_bytes = 0;      // bytes_per_layer x layers_per_chunk x chunks_in_flight
  int64_t embedding_bytes = 0;  // embedding-dropout masks of the micro-batches in flight (stage 0)
  int64_t output_bytes = 0;     // final layernorm + output-layer inputs and the logits the loss keeps (last stage)
  int64_t total_bytes = 0;      // layer_bytes + embedding_bytes + output_bytes
};

// Peak stored activations of pipeline stage `stage`. With 1F1B and at least p micro-batches the first stage
// holds L layers' worth, s b h L / t (34 + 5 a s / h) with TP+SP; the interleaved schedule multiplies that
// by (1 + (p - 1)/(p v)); GPipe holds all m micro-batches. The extra terms of Section 4.2.3,
// (s b h L / t)(p / L + delta(p = 1) (4 / L)(1 + v / h)), are embedding_bytes and output_bytes.
StageActivations stage_activation_memory(const GptConfig& model, const ParallelPlan& plan, int64_t stage);

} // namespace gputwin
