#include "gputwin/models/activation_memory.hpp"

#include "gputwin/common/checked_math.hpp"
#include "gputwin/models/parameter_count.hpp"
#include "gputwin/models/pipeline_schedule.hpp"

#include "gputwin/models/expert_load.hpp"

#include <algorithm>
#include <cmath>

namespace gputwin {

namespace {

// The tokens of one sample on this rank: the sequence, split over the context-parallel ranks.
int64_t local_seq(const GptConfig& model, const ParallelPlan& plan)
{
  return model.seq_len / plan.cp;
}

// s b x: the elements of one width-x tensor of a micro-batch on this rank (s: the rank's share of the sequence).
int64_t sb(const GptConfig& model, const ParallelPlan& plan, int64_t width)
{
  return checked_product({local_seq(model, plan), plan.micro_batch, width}, "--seq-len/--micro-batch/--hidden");
}

// s b h: the elements of one hidden-state tensor of a micro-batch.
int64_t sbh(const GptConfig& model, const ParallelPlan& plan)
{
  return sb(model, plan, model.hidden);
}

// a s^2 b: the elements of one attention-score tensor of a micro-batch, over all heads.
int64_t as2b(const GptConfig& model, const ParallelPlan& plan)
{
  return checked_product({model.heads, local_seq(model, plan), local_seq(model, plan), plan.micro_batch},
                         "--heads/--seq-len/--micro-batch");
}

// Bytes divided by t only where sequence parallelism shards them.
int64_t outside_tp_region(int64_t bytes, const ParallelPlan& plan)
{
  return plan.sequence_parallel() ? bytes / plan.tp : bytes;
}

// a s b: the rows of the attention scores of a micro-batch, over all heads (one log-sum-exp each).
int64_t asb(const GptConfig& model, const ParallelPlan& plan)
{
  return checked_product({model.heads, local_seq(model, plan), plan.micro_batch}, "--heads/--seq-len/--micro-batch");
}

// What the attention core itself stores inside the TP region, before the split by t: unfused, the softmax
// output (2 a s^2 b) and with dropout its mask and output (a s^2 b + 2 a s^2 b); flash, the fp32 log-sum-exp
// (4 a s b), whose RNG state is added per rank by the callers.
int64_t attention_core_bytes(const GptConfig& model, const ParallelPlan& plan)
{
  if (plan.attention == AttentionKernel::Flash)
    return checked_product({4, asb(model, plan)}, "activations");
  return checked_product({model.dropout ? 5 : 2, as2b(model, plan)}, "activations");
}

int64_t flash_state_bytes(const GptConfig& model, const ParallelPlan& plan)
{
  return plan.attention == AttentionKernel::Flash && model.dropout ? flash_rng_state_bytes : 0;
}

// Bytes of `elements` elements of a linear layer's stored input: 2 each (bf16), 1 with FP8 (Transformer Engine
// keeps the FP8 cast it computed for the forward GEMM for the weight gradient: module/linear.py and
// layernorm_linear.py keep only the column-wise (transposed) FP8 data of their input, or the row-wise data where SP
// re-gathers it); with MXFP8 and NVFP4 the same column-wise copy in their format with its block scales
// (quantized_tensor_bytes: 1 + 1/32, 1/2 + 1/16 bytes per element).
int64_t linear_input_bytes(const ParallelPlan& plan, int64_t elements)
{
  return quantized_tensor_bytes(plan.precision, elements);
}

// A norm's fp32 statistics per token, bytes per s b: TE's LayerNormLinear / LayerNorm / RMSNorm save rsigma
// (4 bytes) and, for LayerNorm, mu (4 bytes) (transformer_engine/pytorch/module/layernorm_linear.py,
// prepare_for_saving(inputmat, ..., ln_out, mu, rsigma)). Counted on the Megatron-Core + TE path only.
int64_t norm_statistics_bytes_per_token(const GptConfig& model, const ParallelPlan& plan)
{
  if (!megatron_core_te_memory(plan))
    return 0;
  return model.norm == Norm::LayerNorm ? 8 : 4;
}

// Stored outside the TP regions, before SP's split: the two norm inputs (2 x 2 sbh), the two norm outputs that
// are the QKV and fc1 inputs (2 x 2 sbh, FP8: 2 x sbh), the two residual-dropout masks (2 x sbh, with dropout)
// and, with TE, the two norms' fp32 statistics.
int64_t outside_layer_bytes(const GptConfig& model, const ParallelPlan& plan)
{
  const int64_t per_sbh = 4 + (model.dropout ? 2 : 0);
  const int64_t stats = checked_product({2 * norm_statistics_bytes_per_token(model, plan), sb(model, plan, 1)},
                                        "activations");
  const int64_t inputs = checked_product({2, linear_input_bytes(plan, sbh(model, plan))}, "activations");
  int64_t bytes = checked_sum(checked_sum(checked_product({per_sbh, sbh(model, plan)}, "activations"), inputs,
                                          "activations"),
                              stats, "activations");
  if (model.mla.enabled()) {
    // MLA's duplicated down projections (on the SP shard): the q latent and its norm output (the q up projection's
    // input), the kv latent with the rope key and the kv norm output (the kv up projection's input), 2 bytes each.
    const MlaConfig& m = model.mla;
    const int64_t latents = 2 * m.q_lora_rank + 2 * m.kv_lora_rank + m.qk_rope_head_dim;
    bytes = checked_sum(bytes, checked_product({2, sb(model, plan, latents)}, "activations"), "activations");
  }
  return bytes;
}

// Stored inside the TP regions (split by t), besides the attention core: Q (2 s b a d), K and V (2 x 2 s b g d),
// the attention output that is the projection input (2 s b a d, FP8 s b a d; a d = h unless the head size is set), fc1's output (2 s b F', F' = F or 2F for
// SwiGLU) and the activation output that is fc2's input (2 s b F, FP8 s b F). With TE and FP8 the attention
// keeps its BF16 output for its own backward (attention/dot_product_attention/backends.py FusedAttnFunc saves
// q, k, v, out) while the projection keeps its FP8 cast: 2 s b a d + s b a d.
int64_t inside_attention_bytes(const GptConfig& model, const ParallelPlan& plan)
{
  // The attention output of width x: 2 x (the core's, with TE and a quantized plan) + the projection's input.
  const auto attention_output = [&](int64_t width) {
    const int64_t elements = sb(model, plan, width);
    const int64_t core = plan.quantized() && megatron_core_te_memory(plan) ? 2 : 0;
    return checked_sum(checked_product({2 + core, elements}, "activations"), linear_input_bytes(plan, elements),
                       "activations");
  };
  if (model.mla.enabled()) {
    // MLA: Q and K a (d_nope + d_rope) wide, V and the attention output (the projection's input) a d_v wide.
    const int64_t qk = checked_product({model.heads, model.mla.qk_head_dim()}, "activations");
    const int64_t v = checked_product({model.heads, model.mla.v_head_dim}, "activations");
    return checked_sum(checked_product({4, sb(model, plan, qk)}, "activations"),
                       attention_output(v), "activations");
  }
  int64_t bytes = attention_output(model.attention_width());
  return checked_sum(bytes, checked_product({4, sb(model, plan, model.kv_dim())}, "activations"), "activations");
}

// What an MLP of width f (a dense layer's, or the shared experts') stores inside its TP region, before the split by
// t: fc1's output (2 s b f', f' = 2f for SwiGLU) and the activation output that is fc2's input (2 s b f, FP8 s b f).
int64_t mlp_inside_bytes(const GptConfig& model, const ParallelPlan& plan, int64_t f)
{
  const int64_t fc1 = model.activation == Activation::SwiGlu ? 2 * f : f;
  return checked_sum(checked_product({2, sb(model, plan, fc1)}, "activations"),
                     linear_input_bytes(plan, sb(model, plan, f)), "activations");
}

int64_t inside_layer_bytes(const GptConfig& model, const ParallelPlan& plan)
{
  return checked_sum(inside_attention_bytes(model, plan), mlp_inside_bytes(model, plan, model.ffn()), "activations");
}

int64_t no_recompute_layer_bytes(const GptConfig& model, const ParallelPlan& plan)
{
  // Section 4.1: 34 sbh + 5 a s^2 b per layer for the paper's GPT (attention 11 sbh + 5 a s^2 b, MLP 19 sbh,
  // layernorms 4 sbh). 24 sbh and the attention core's 5 a s^2 b lie inside the tensor-parallel regions and
  // split by t (Section 4.2.1); 10 sbh -- the two layernorm inputs, their outputs and the two post-block
  // dropout masks -- lie outside, replicated under plain TP and sharded by sequence parallelism (Section 4.2.2).
  // With flash attention the core's 5 a s^2 b is 4 a s b + the RNG state (activation_memory.hpp).
  const int64_t inside = checked_sum(inside_layer_bytes(model, plan), attention_core_bytes(model, plan), "activations");
  return checked_sum(inside / plan.tp + outside_tp_region(outside_layer_bytes(model, plan), plan),
                     flash_state_bytes(model, plan), "activations");
}

// Routed token copies the busiest rank's experts take in one micro-batch: the etp ranks of an expert slice share the
// tokens of their etp x (s b / t) (the rank's sequence-parallel shard each), k copies each, x the busiest EP rank's
// load (expert_load.hpp: 1 balanced; capped by the capacity factor).
int64_t routed_copies(const GptConfig& model, const ParallelPlan& plan, double max_rank_load)
{
  const double tokens = static_cast<double>(sb(model, plan, 1)) / static_cast<double>(plan.tp) *
                        static_cast<double>(plan.expert_tp() * model.moe.topk);
  return static_cast<int64_t>(std::ceil(tokens * max_rank_load));
}

// What a MoE layer's MLP stores on one rank, in place of the dense MLP's fc1 and activation outputs:
//   router (on the SP shard)   its logits (2 s b E) and fp32 probabilities (4 s b E)
//   shared experts (split by t) fc1's output 2 s b F_s' and the activation output s b F_s x linear input bytes
//   per routed copy            the permuted token, the grouped fc1's input (2h, FP8 h), fc1's output 2 F_e'/etp,
//                              the activation output F_e/etp x linear input bytes, and the expert output the
//                              unpermute keeps for the gradient of the routing probabilities (2h)
// (Megatron-Core moe/router.py, moe/experts.py TEGroupedMLP, moe/moe_utils.py unpermute).
int64_t moe_mlp_bytes(const GptConfig& model, const ParallelPlan& plan, double max_rank_load)
{
  const MoeConfig& m = model.moe;
  const int64_t etp = plan.expert_tp();
  const int64_t router = outside_tp_region(checked_product({6, sb(model, plan, m.experts)}, "activations"), plan);
  const int64_t fc1e = model.activation == Activation::SwiGlu ? 2 * m.expert_ffn_hidden : m.expert_ffn_hidden;
  const int64_t per_copy = linear_input_bytes(plan, model.hidden) + 2 * model.hidden +
                           (2 * fc1e + linear_input_bytes(plan, m.expert_ffn_hidden)) / etp;
  const int64_t routed = checked_product({routed_copies(model, plan, max_rank_load), per_copy}, "activations");
  const int64_t shared = m.shared_width() > 0 ? mlp_inside_bytes(model, plan, m.shared_width()) / plan.tp : 0;
  return checked_sum(checked_sum(router, shared, "activations"), routed, "activations");
}

// A MoE layer's stored bytes without recompute (with_core: the attention core too, dropped by selective recompute
// with the unfused kernel): the dense layer's attention, norms and residual terms with the MLP part replaced.
int64_t moe_layer_bytes(const GptConfig& model, const ParallelPlan& plan, double max_rank_load, bool with_core)
{
  int64_t inside = inside_attention_bytes(model, plan);
  if (with_core)
    inside = checked_sum(inside, attention_core_bytes(model, plan), "activations");
  const int64_t bytes = checked_sum(inside / plan.tp + outside_tp_region(outside_layer_bytes(model, plan), plan),
                                    moe_mlp_bytes(model, plan, max_rank_load), "activations");
  return checked_sum(bytes, with_core ? flash_state_bytes(model, plan) : 0, "activations");
}

// What Megatron-Core's --recompute-modules (recompute_modules.hpp) do not keep of one layer (moe_layer: a MoE layer
// at the busiest rank's load), by block: a block's pieces rerun together when backward reaches it, so the larger
// block's bytes are also the transient workspace of the rerun.
struct DroppedBytes {
  int64_t attention = 0, mlp = 0;
};

DroppedBytes recompute_modules_dropped(const GptConfig& model, const ParallelPlan& plan, bool moe_layer,
                                       double max_rank_load)
{
  DroppedBytes d;
  const auto add = [](int64_t& to, int64_t bytes) { to = checked_sum(to, bytes, "activations"); };
  // A separate norm's output (the next linear layers' saved input) and its fp32 statistics, on the SP shard.
  const int64_t norm = outside_tp_region(
      checked_sum(linear_input_bytes(plan, sbh(model, plan)),
                  checked_product({norm_statistics_bytes_per_token(model, plan), sb(model, plan, 1)}, "activations"),
                  "activations"),
      plan);
  if (recomputes(plan, RecomputeModule::CoreAttn)) {
    // The core's own saved state (the softmax output and dropout, or the fused kernel's log-sum-exp and RNG state)
    // and, with a quantized plan, the fused kernel's BF16 copy of its output; Q, K, V stay (the checkpoint's inputs).
    int64_t core = attention_core_bytes(model, plan);
    if (plan.quantized() && megatron_core_te_memory(plan))
      add(core, checked_product({2, sb(model, plan, model.mla.enabled() ? model.heads * model.mla.v_head_dim
                                                                         : model.attention_width())},
                                "activations"));
    add(d.attention, checked_sum(core / plan.tp, flash_state_bytes(model, plan), "activations"));
  }
  if (model.mla.enabled() && recomputes(plan, RecomputeModule::Layernorm))
    add(d.attention, norm); // MLA's input norm (TENorm); the others are fused into the next linear layer
  if (model.mla.enabled() && recomputes(plan, RecomputeModule::MlaUpProj)) {
    // Q and K (a (d_nope + d_rope) wide) and V (a d_v), the up projections' outputs, and the q and kv latents' norm
    // outputs (the up projections' inputs); the latents themselves stay (the checkpoint's inputs).
    const int64_t qkv = checked_sum(checked_product({4, sb(model, plan, model.heads * model.mla.qk_head_dim())},
                                                    "activations"),
                                    checked_product({2, sb(model, plan, model.heads * model.mla.v_head_dim)},
                                                    "activations"),
                                    "activations");
    const int64_t normed = checked_product(
        {2, sb(model, plan, model.mla.q_lora_rank + model.mla.kv_lora_rank)}, "activations");
    add(d.attention, checked_sum(qkv / plan.tp, outside_tp_region(normed, plan), "activations"));
  }
  if (!moe_layer) {
    if (recomputes(plan, RecomputeModule::Mlp)) // fc1's input (the fused norm's output), fc1's and the activation's
      add(d.mlp, checked_sum(norm, mlp_inside_bytes(model, plan, model.ffn()) / plan.tp, "activations"));
    return d;
  }
  if (recomputes(plan, RecomputeModule::Layernorm))
    add(d.mlp, norm); // the pre-MLP norm (TENorm in MoE layers)
  if (recomputes(plan, RecomputeModule::Moe)) {
    add(d.mlp, moe_mlp_bytes(model, plan, max_rank_load));
    return d;
  }
  const MoeConfig& m = model.moe;
  if (m.shared_width() > 0 && recomputes(plan, RecomputeModule::SharedExperts))
    add(d.mlp, mlp_inside_bytes(model, plan, m.shared_width()) / plan.tp);
  if (recomputes(plan, RecomputeModule::MoeAct)) // the activation output, the expert fc2's input, per routed copy
    add(d.mlp, checked_product({routed_copies(model, plan, max_rank_load),
                                linear_input_bytes(plan, m.expert_ffn_hidden) / plan.expert_tp()},
                               "activations"));
  return d;
}

int64_t dropped_total(const DroppedBytes& d)
{
  return checked_sum(d.attention, d.mlp, "activations");
}

} // namespace

int64_t activation_bytes_per_layer(const GptConfig& model, const ParallelPlan& plan, int64_t layer,
                                   double max_rank_load)
{
  if (!model.is_moe_layer(layer) || plan.recompute == Recompute::Full)
    return activation_bytes_per_layer(model, plan);
  if (!plan.recompute_modules.empty())
    return moe_layer_bytes(model, plan, max_rank_load, true) -
           dropped_total(recompute_modules_dropped(model, plan, true, max_rank_load));
  const bool core = plan.recompute == Recompute::None || plan.attention == AttentionKernel::Flash;
  return moe_layer_bytes(model, plan, max_rank_load, core);
}

int64_t moe_dispatch_buffer_bytes(const GptConfig& model, const ParallelPlan& plan, double max_rank_load)
{
  if (!model.moe.enabled())
    return 0;
  // The dispatch all-to-all's receive buffer and the combine's, h wide each per routed copy, BF16.
  return checked_product({2, 2, routed_copies(model, plan, max_rank_load), model.hidden}, "activations");
}

bool megatron_core_te_memory(const ParallelPlan& plan)
{
  return plan.attention == AttentionKernel::Flash;
}

int64_t activation_bytes_per_layer(const GptConfig& model, const ParallelPlan& plan)
{
  switch (plan.recompute) {
  case Recompute::None: return no_recompute_layer_bytes(model, plan);
  case Recompute::Selective:
    if (!plan.recompute_modules.empty())
      return no_recompute_layer_bytes(model, plan) - dropped_total(recompute_modules_dropped(model, plan, false, 1));
    // Flash attention stores nothing s x s for selective recompute to drop: the same bytes as no recompute.
    if (plan.attention == AttentionKernel::Flash)
      return no_recompute_layer_bytes(model, plan);
    // The attention core (softmax output 2 a s^2 b, its dropout mask a s^2 b, dropout output 2 a s^2 b) is not
    // kept: 24 sbh / t inside the TP blocks, 10 sbh outside (the paper's GPT).
    return inside_layer_bytes(model, plan) / plan.tp + outside_tp_region(outside_layer_bytes(model, plan), plan);
  case Recompute::Full: return outside_tp_region(2 * sbh(model, plan), plan);
  }
  return 0;
}

int64_t recompute_workspace_bytes(const GptConfig& model, const ParallelPlan& plan)
{
  switch (plan.recompute) {
  case Recompute::None: return 0;
  case Recompute::Selective:
    if (!plan.recompute_modules.empty()) {
      // The largest block rerun at once, over the model's layer kinds (MoE layers at the busiest rank's load).
      const auto largest = [](const DroppedBytes& d) { return std::max(d.attention, d.mlp); };
      int64_t bytes = largest(recompute_modules_dropped(model, plan, false, 1));
      if (model.moe.enabled())
        bytes = std::max(bytes, largest(recompute_modules_dropped(model, plan, true,
                                                                  expert_loads(model, plan).max_rank_load())));
      return bytes;
    }
    if (plan.attention == AttentionKernel::Flash)
      return 0; // nothing recomputed outside the fused backward
    return attention_core_bytes(model, plan) / plan.tp;
  case Recompute::Full: return no_recompute_layer_bytes(model, plan);
  }
  return 0;
}

int64_t layer_backward_workspace_bytes(const GptConfig& model, const ParallelPlan& plan)
{
  if (!megatron_core_te_memory(plan))
    return 0;
  // fc2's input gradient (s b F) and the activation's input gradient (s b F', F' = 2F for SwiGLU), BF16, both
  // alive while the activation's backward runs (Megatron-Core fusions/fused_bias_swiglu.py, TE module/linear.py).
  const int64_t width = checked_sum(model.ffn(), model.fc1_width(), "activations");
  return checked_product({2, sb(model, plan, width)}, "activations") / plan.tp;
}

int64_t output_backward_workspace_bytes(const GptConfig& model, const ParallelPlan& plan)
{
  if (!megatron_core_te_memory(plan))
    return 0;
  const int64_t vocab_per_rank = padded_vocab(model, plan.tp) / plan.tp;
  // The output layer's weight-gradient placeholder: with gradient-accumulation fusion the GEMM accumulates into
  // the fp32 main_grad and Megatron returns a fresh BF16 tensor of the weight's shape to autograd
  // (core/tensor_parallel/layers.py LinearWithGradAccumulationAndAsyncCommunication.backward, torch.empty(
  // weight.main_grad.shape, dtype=input.dtype)): 2 (v / t) h.
  int64_t bytes = checked_product({2, vocab_per_rank, model.hidden}, "activations");
  // Its input gradient over the rank's whole sequence (the input was all-gathered under SP): 2 s b h.
  bytes = checked_sum(bytes, checked_product({2, sbh(model, plan)}, "activations"), "activations");
  // Unfused loss: the BF16 gradient of the logits, cast from the fp32 one (2 s b v / t); the fused loss returns
  // its input, already holding the gradient.
  if (!plan.cross_entropy_fusion)
    bytes = checked_sum(bytes, checked_product({2, sb(model, plan, vocab_per_rank)}, "activations"), "activations");
  return bytes;
}

StageActivations stage_activation_memory(const GptConfig& model, const ParallelPlan& plan, int64_t stage)
{
  const PipelineShape shape = pipeline_shape(plan);
  StageActivations a;
  a.bytes_per_layer = activation_bytes_per_layer(model, plan);
  if (model.moe.enabled()) {
    // Layers differ (dense and MoE): the stage's mean per layer, rounded up, at the busiest EP rank's load.
    const double load = expert_loads(model, plan).max_rank_load();
    int64_t sum = 0, count = 0;
    for (int64_t chunk = 0; chunk < stage_chunks(plan); ++chunk) {
      const int64_t first = chunk_first_layer(model, plan, stage, chunk);
      for (int64_t l = first; l < first + chunk_layers(model, plan, stage, chunk); ++l, ++count)
        sum = checked_sum(sum, activation_bytes_per_layer(model, plan, l, load), "activations");
    }
    a.bytes_per_layer = count > 0 ? (sum + count - 1) / count : a.bytes_per_layer;
  }
  a.layers_per_chunk = max_chunk_layers(model, plan, stage); // uneven chunks (chunk_layers): the largest one's
  a.chunks_in_flight = peak_in_flight(shape, stage);
  a.layer_bytes = checked_product({a.bytes_per_layer, peak_layers_in_flight(model, plan, stage)}, "activations");

  if (stage == 0 && model.dropout) {
    // Embedding dropout mask, 1 byte per element (s b h, sharded by SP), kept for each micro-batch whose
    // first chunk is in flight: p of them with 1F1B, as in the paper's s b h p / t term.
    std::vector<int64_t> first_chunk_only(static_cast<size_t>(shape.chunks), 0);
    first_chunk_only[0] = 1;
    const int64_t peak = peak_weighted_in_flight(shape, 0, first_chunk_only);
    a.embedding_bytes = checked_product({outside_tp_region(sbh(model, plan), plan), peak}, "activations");
  }
  if (stage == plan.pp - 1) {
    // Final layernorm input and output-layer input (2 sbh each, sharded by SP: Megatron's ColumnParallelLinear
    // saves its un-gathered input, core/tensor_parallel/layers.py) and the fp32 logits of the
    // vocabulary-parallel loss (4 s b v / t), for the one micro-batch whose last chunk is in flight:
    // 4 sbh / t (1 + v / h) with SP, the paper's delta(p = 1) term. Megatron's unfused loss
    // (core/tensor_parallel/cross_entropy.py) casts the logits to fp32 and saves exp_logits; TE's fused one
    // (transformer_engine/pytorch/cross_entropy.py, save_for_backward(inp)) keeps the BF16 logits (2 s b v / t),
    // its forward writing the gradient into them. With TE, the final norm's fp32 statistics too.
    const int64_t logits = checked_product({plan.cross_entropy_fusion ? 2 : 4, local_seq(model, plan),
                                            plan.micro_batch, padded_vocab(model, plan.tp)},
                                           "activations") /
                           plan.tp;
    const int64_t norm = checked_sum(
        4 * sbh(model, plan),
        checked_product({norm_statistics_bytes_per_token(model, plan), sb(model, plan, 1)}, "activations"),
        "activations");
    a.output_bytes = checked_sum(outside_tp_region(norm, plan), logits, "activations");
  }
  a.total_bytes =
      checked_sum(checked_sum(a.layer_bytes, a.embedding_bytes, "activations"), a.output_bytes, "activations");
  return a;
}

} // namespace gputwin
