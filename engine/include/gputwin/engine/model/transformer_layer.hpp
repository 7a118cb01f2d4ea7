#pragma once
// One pre-norm transformer layer on one rank, with tensor parallelism (column-parallel QKV and first MLP
// linear, row-parallel attention output and second MLP linear; Shoeybi et al. 2019), optional sequence
// parallelism and activation recompute (Korthikanti et al. 2022, Sections 4.2.2 and 5):
//
//   x -> N1 -> [g|f] -> QKV (-> RoPE) -> attention core -> proj -> [g-bar|f-bar] -> +bias, dropout -> +x = r1
//   r1 -> N2 -> [g|f] -> fc1 -> GeLU | SwiGLU -> fc2 -> [g-bar|f-bar] -> +bias, dropout -> +r1 = y
//
// The paper's GPT (LayerNorm, GeLU, biases, dropout) or a Llama-style layer (GptConfig: RMSNorm, SwiGLU,
// rotary positions, grouped-query attention, no biases, no dropout), in the workload generator's op order
// (models/layer_ops.cpp). The residual stream x, r1, y is (s/t, b, h) with SP and (s, b, h) without; tensors
// inside the TP blocks are (s, b, cols/t). Every activation is bf16 (masks u8); gradients are fp32.

#include "gputwin/engine/model/moe_mlp.hpp"
#include "gputwin/engine/model/norm.hpp"

#include <memory>
#include "gputwin/engine/model/parameter_store.hpp"

namespace gputwin::engine {

// Every tensor one layer's forward produces for one micro-batch that backward may need, with its Table 2
// bytes for the paper's GPT (without dropout the masks and probs_dropped are not made) (sbh = s b h; "/t" on the residual-stream tensors only with SP). No recompute keeps all of them,
// 34 sbh + 5 a s^2 b in total; selective drops the attention core (the 5 a s^2 b); full keeps only x.
// With flash attention the core keeps lse and rng_state instead of probs, attn_mask and probs_dropped:
// 34 sbh + 4 a s b + 16 (models/activation_memory.hpp), with or without selective recompute.
struct LayerActivations {
  Tensor x;             // (s_l, b, h) layer input = LN1 input                     2 sbh
  Tensor ln1;           // (s_l, b, h) LN1 output, the QKV input (shard with SP)    2 sbh
  Tensor qkv;           // (s, b, (a + 2g) d/t) Q, K, V (Q, K rotated with RoPE)    6 sbh / t (g = a)
  Tensor probs;         // (b, a/t, s, s) softmax output                            2 a s^2 b / t
  Tensor attn_mask;     // (b, a/t, s, s) softmax-dropout mask, u8                  a s^2 b / t
  Tensor probs_dropped; // (b, a/t, s, s) softmax-dropout output                    2 a s^2 b / t
  Tensor lse;           // (b, a/t, s) f32 flash: log-sum-exp of each score row      4 a s b / t
  Tensor rng_state;     // 16 bytes flash: dropout key and position (seed, offset)    16
  Tensor context;       // (s, b, h/t) attention over V, output-projection input    2 sbh / t
  Tensor drop1_mask;    // (s_l, b, h) attention-output dropout mask, u8            sbh
  Tensor r1;            // (s_l, b, h) residual after attention = LN2 input         2 sbh
  Tensor ln2;           // (s_l, b, h) LN2 output, the fc1 input (shard with SP)    2 sbh
  Tensor fc1_out;       // (s, b, 4h/t) GeLU input (SwiGLU: (s, b, 2F/t) [gate|up])  8 sbh / t
  Tensor act_out;       // (s, b, 4h/t) GeLU (SwiGLU: (s, b, F/t)) output, fc2 input  8 sbh / t
  Tensor drop2_mask;    // (s_l, b, h) MLP-output dropout mask, u8                  sbh
  MoeActivations moe;   // a MoE layer's MLP block (instead of fc1_out, act_out)

  // Bytes of the tensors currently held.
  int64_t bytes() const;
  // Every tensor, the MoE block's included.
  std::vector<Tensor*> tensors();
};

class TransformerLayer {
public:
  // Declares the layer's parameters (global layer index `layer`) in `store`.
  TransformerLayer(RankContext& ctx, ParameterStore& store, int64_t layer);

  // Forward of micro-batch `micro_batch`: consumes x (s_l, b, h) bf16 and returns y (Workspace). Keeps in
  // `saved` what plan.recompute needs for backward, counted as LayerActivations.
  Tensor forward(Tensor x, int64_t micro_batch, LayerActivations& saved);
  // Backward: d_y (s_l, b, h) f32 -> d_x; accumulates the parameter gradients and frees `saved`.
  // Recomputes the attention core (selective) or the whole forward (full) first.
  Tensor backward(Tensor d_y, int64_t micro_batch, LayerActivations& saved);

  int64_t layer() const { return layer_; }

private:
  // The forward from acts.x; fills every other member of `acts` (Workspace) and returns y.
  Tensor run_forward(LayerActivations& acts, int64_t micro_batch);
  // QK^T, softmax, dropout and attention over V from acts.qkv (forward, and again for selective recompute);
  // with flash attention one fused kernel that writes acts.context, acts.lse and acts.rng_state.
  void attention_core_forward(LayerActivations& acts, int64_t micro_batch);
  // The attention core's backward: d_context -> d_qkv (every part), unfused or fused.
  void attention_core_backward(Tensor& d_qkv, const Tensor& d_context, LayerActivations& acts, int64_t micro_batch);
  // Where the softmax dropout of micro-batch `micro_batch` sits in the iteration's (B, a, s, s) probabilities.
  DropoutSite attention_dropout_site(int64_t micro_batch) const;
  Tensor mlp_backward(const Tensor& d_y, LayerActivations& acts); // returns d_r1
  Tensor attention_backward(const Tensor& d_r1, LayerActivations& acts, int64_t micro_batch); // returns d_x
  // y = residual + dropout(partial + bias) after the row-parallel linear's reduction (no bias: null; without
  // dropout the plain residual add); returns y (bf16).
  Tensor bias_dropout_residual(Tensor partial_full, const Parameter* bias, const Tensor& residual, Tensor& mask,
                               int64_t micro_batch, int site);
  // The same after the reduction: out (s_l, b, h) is this rank's (a MoE block's output, which needs none).
  Tensor dropout_residual(Tensor out, const Parameter* bias, const Tensor& residual, Tensor& mask, int64_t micro_batch,
                          int site);

  // The attention core's sizes on this rank, and RoPE's over them (positions: the whole sequence of a sample).
  AttentionDims attention_dims() const;
  RopeDims rope_dims() const;
  // Dropout is part of the model (GptConfig::dropout); without it no dropout op runs, as the generator emits none.
  bool dropout_enabled() const { return ctx_.model.dropout; }
  // K/V heads per query head: flash attention reads (and writes the gradients of) K and V once per group.
  double kv_share() const { return static_cast<double>(ctx_.shape.g) / static_cast<double>(ctx_.shape.a); }
  // The row-parallel output gradient (s_l, b, h) made whole for the GEMMs: all-gather with SP.
  Tensor row_parallel_output_grad(const Tensor& d_out);
  // The column-parallel input (s_l, b, h) made whole: all-gather with SP (forward, and re-gathered in backward).
  Tensor column_parallel_input(const Tensor& ln_out);
  // Reduces the column-parallel input gradient (s, b, h) partials: reduce-scatter with SP, all-reduce without.
  Tensor column_parallel_input_grad(Tensor d_in_partial);
  void gemm(OpName name, Tensor& c, const Tensor& a, bool ta, const Tensor& b, bool tb, int64_t m,
            int64_t n, int64_t k, float beta);

  RankContext& ctx_;
  int64_t layer_;
  NormParameters ln1_, ln2_;
  // The biases are null without biases (GptConfig::bias).
  Parameter *qkv_weight_, *qkv_bias_, *proj_weight_, *proj_bias_;
  Parameter *fc1_weight_ = nullptr, *fc1_bias_ = nullptr, *fc2_weight_ = nullptr, *fc2_bias_ = nullptr;
  std::unique_ptr<MoeMlp> moe_; // a MoE layer (GptConfig::is_moe_layer): the MLP block's router and experts
};

} // namespace gputwin::engine
