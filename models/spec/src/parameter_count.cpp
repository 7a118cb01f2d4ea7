#include "gputwin/models/parameter_count.hpp"

#include "gputwin/common/checked_math.hpp"

#include <algorithm>

namespace gputwin {

int64_t padded_vocab(const GptConfig& model, int64_t tp)
{
  const int64_t multiple = checked_product({128, tp}, "--tp");
  return checked_product({(model.vocab + multiple - 1) / multiple, multiple}, "--vocab");
}

namespace {

const char* const width_field = "--hidden";

int64_t product(std::initializer_list<int64_t> factors)
{
  return checked_product(factors, width_field);
}

int64_t sum_of(std::initializer_list<int64_t> terms)
{
  int64_t n = 0;
  for (const int64_t t : terms)
    n = checked_sum(n, t, width_field);
  return n;
}

// Elements of a norm over `width` channels: gamma and beta (LayerNorm), gamma alone (RMSNorm).
int64_t norm_of(const GptConfig& model, int64_t width)
{
  return model.norm == Norm::RmsNorm ? width : 2 * width;
}

// Elements of one norm's parameters over the hidden size.
int64_t norm_parameters(const GptConfig& model)
{
  return norm_of(model, model.hidden);
}

// An MLP of width `f` (fc1 h -> f, or 2f gated, and fc2 f -> h), split into what tensor parallelism splits (both
// weights, fc1's column-parallel bias) and what it replicates (fc2's row-parallel bias).
SplitParameters mlp_of(const GptConfig& model, int64_t f)
{
  const int64_t h = model.hidden, fc1 = model.activation == Activation::SwiGlu ? 2 * f : f;
  SplitParameters p;
  p.split = sum_of({product({h, fc1}), product({f, h}), model.bias ? fc1 : 0});
  p.replicated = model.bias ? h : 0;
  return p;
}

// Grouped-query attention: QKV h (a d + 2 g d) (+ bias) and the projection a d x h column/row-parallel, the
// projection's bias replicated. a d = h unless the head size is set (Qwen3: 64 x 128 over h 4096).
SplitParameters gqa_attention(const GptConfig& model)
{
  const int64_t h = model.hidden, q = model.attention_width(), qkv = q + 2 * model.kv_dim();
  SplitParameters p;
  p.split = sum_of({product({h, qkv}), product({q, h}), model.bias ? qkv : 0});
  p.replicated = model.bias ? h : 0;
  return p;
}

// Multi-head latent attention as Megatron-Core builds it (multi_latent_attention.py, gpt_layer_specs.py): the
// down projections h -> q_lora and h -> kv_lora + d_rope are duplicated on every TP rank (parallel_mode
// "duplicated") with the q and kv norms; the up projections q_lora -> a (d_nope + d_rope) and
// kv_lora -> a (d_nope + d_v) are column-parallel, the projection a d_v -> h row-parallel. q_lora_rank 0: one
// column-parallel h -> a (d_nope + d_rope). No biases (DeepSeek-V2/V3 have none).
SplitParameters mla_attention(const GptConfig& model)
{
  const MlaConfig& m = model.mla;
  const int64_t h = model.hidden, a = model.heads;
  const int64_t q_width = product({a, m.qk_head_dim()});
  SplitParameters p;
  const int64_t q_up = m.q_lora_rank > 0 ? product({m.q_lora_rank, q_width}) : product({h, q_width});
  p.split = sum_of({q_up, product({m.kv_lora_rank, a, m.qk_nope_head_dim + m.v_head_dim}),
                    product({a, m.v_head_dim, h})});
  const int64_t q_down = m.q_lora_rank > 0 ? sum_of({product({h, m.q_lora_rank}), norm_of(model, m.q_lora_rank)}) : 0;
  p.replicated = sum_of({q_down, product({h, m.kv_lora_rank + m.qk_rope_head_dim}), norm_of(model, m.kv_lora_rank)});
  return p;
}

SplitParameters attention_of(const GptConfig& model)
{
  return model.mla.enabled() ? mla_attention(model) : gqa_attention(model);
}

// The dense part of a layer whose MLP is `mlp`: attention, the MLP, the two norms (replicated).
SplitParameters dense_layer(const GptConfig& model, const SplitParameters& mlp)
{
  const SplitParameters attention = attention_of(model);
  return {checked_sum(attention.split, mlp.split, width_field),
          sum_of({attention.replicated, mlp.replicated, 2 * norm_parameters(model)})};
}

// The dense (non-expert) part of a MoE layer: attention, norms, the shared experts (one TP-split MLP of the
// shared width) and the router h x E, replicated over TP (Megatron-Core TopKRouter's weight).
SplitParameters moe_dense_layer(const GptConfig& model)
{
  SplitParameters mlp = mlp_of(model, model.moe.shared_width());
  if (model.moe.shared_width() == 0)
    mlp = {};
  mlp.replicated = checked_sum(mlp.replicated, product({model.hidden, model.moe.experts}), width_field);
  return dense_layer(model, mlp);
}

// Parameters of one routed expert of `tp` ranks' worth: its MLP split by etp (expert tensor parallelism).
int64_t expert_per_rank(const GptConfig& model, int64_t etp)
{
  const SplitParameters e = mlp_of(model, model.moe.expert_ffn_hidden);
  return checked_sum(e.split / etp, e.replicated, width_field);
}

int64_t position_parameters(const GptConfig& model)
{
  return model.position == PositionEmbedding::Learned ? checked_product({model.seq_len, model.hidden}, "--seq-len")
                                                      : 0;
}

int64_t word_embedding_per_rank(const GptConfig& model, int64_t tp)
{
  return checked_product({padded_vocab(model, tp) / tp, model.hidden}, "--vocab");
}

// One MTP module's own parameters besides its transformer layer: eh_proj 2h -> h, column-parallel, and its three
// norms (enorm, hnorm and the final norm before the shared output layer), replicated (Megatron-Core
// multi_token_prediction.py MultiTokenPredictionLayer; DeepSeek-V3's enorm, hnorm, eh_proj, shared_head.norm).
SplitParameters mtp_extra(const GptConfig& model)
{
  return {product({2 * model.hidden, model.hidden}), 3 * norm_parameters(model)};
}

// The transformer layer of an MTP module: MoE when the model's last layer is (Megatron's
// num_floating_point_operations counts it so; DeepSeek-V3's MTP layer is a MoE layer).
int64_t mtp_layer_index(const GptConfig& model)
{
  return model.layers - 1;
}

} // namespace

LayerParameters layer_parameter_split(const GptConfig& model, int64_t layer)
{
  LayerParameters p;
  if (!model.is_moe_layer(layer)) {
    p.dense = layer_parameters(model);
    return p;
  }
  const SplitParameters dense = moe_dense_layer(model);
  p.dense = checked_sum(dense.split, dense.replicated, width_field);
  const SplitParameters e = mlp_of(model, model.moe.expert_ffn_hidden);
  p.expert = product({model.moe.experts, checked_sum(e.split, e.replicated, width_field)});
  p.expert_activated = product({model.moe.topk, checked_sum(e.split, e.replicated, width_field)});
  return p;
}

int64_t embedding_parameters_per_gpu(const GptConfig& model, int64_t tp)
{
  return checked_sum(word_embedding_per_rank(model, tp), position_parameters(model), "--vocab");
}

LayerParameters layer_parameter_split_per_gpu(const GptConfig& model, const ParallelPlan& plan, int64_t layer)
{
  LayerParameters p;
  if (!model.is_moe_layer(layer)) {
    p.dense = layer_parameters_per_gpu(model, plan.tp);
    return p;
  }
  const SplitParameters dense = moe_dense_layer(model);
  p.dense = checked_sum(dense.split / plan.tp, dense.replicated, width_field);
  p.expert = product({model.moe.experts / plan.ep, expert_per_rank(model, plan.expert_tp())});
  return p;
}

int64_t layer_parameters(const GptConfig& model)
{
  const SplitParameters p = dense_layer(model, mlp_of(model, model.ffn()));
  return checked_sum(p.split, p.replicated, width_field);
}

int64_t model_parameters(const GptConfig& model, int64_t tp)
{
  const int64_t h = model.hidden;
  const int64_t word = checked_product({padded_vocab(model, tp), h}, "--vocab");
  int64_t total = 0;
  if (model.moe.enabled()) {
    for (int64_t l = 0; l < model.layers; ++l)
      total = checked_sum(total, layer_parameter_split(model, l).total(), "--layers");
  } else {
    total = checked_product({model.layers, layer_parameters(model)}, "--layers");
  }
  total = checked_sum(total, word, "--vocab");
  if (!model.tie_embeddings)
    total = checked_sum(total, word, "--vocab"); // the output layer's own matrix
  total = checked_sum(total, position_parameters(model), "--seq-len");
  return checked_sum(total, norm_parameters(model), "--hidden");
}

int64_t activated_parameters(const GptConfig& model, int64_t tp)
{
  int64_t inactive = 0;
  for (int64_t l = 0; l < model.layers && model.moe.enabled(); ++l) {
    const LayerParameters p = layer_parameter_split(model, l);
    inactive = checked_sum(inactive, p.expert - p.expert_activated, "--layers");
  }
  return model_parameters(model, tp) - inactive;
}

int64_t mtp_parameters(const GptConfig& model)
{
  if (model.moe.mtp_layers == 0)
    return 0;
  const SplitParameters extra = mtp_extra(model);
  const int64_t one = sum_of({layer_parameter_split(model, mtp_layer_index(model)).total(), extra.split,
                              extra.replicated});
  return checked_product({model.moe.mtp_layers, one}, "--mtp-layers");
}

int64_t layer_parameters_per_gpu(const GptConfig& model, int64_t tp)
{
  // Heads, query groups and F are multiples of t (validate_plan), so every split below is exact.
  const SplitParameters p = dense_layer(model, mlp_of(model, model.ffn()));
  return p.split / tp + p.replicated;
}

StageParameters stage_parameter_split(const GptConfig& model, const ParallelPlan& plan, int64_t stage)
{
  StageParameters p;
  if (model.moe.enabled()) {
    for (int64_t chunk = 0; chunk < stage_chunks(plan); ++chunk) {
      const int64_t first = chunk_first_layer(model, plan, stage, chunk);
      for (int64_t l = first; l < first + chunk_layers(model, plan, stage, chunk); ++l) {
        const LayerParameters layer = layer_parameter_split_per_gpu(model, plan, l);
        p.dense = checked_sum(p.dense, layer.dense, "--layers");
        p.expert = checked_sum(p.expert, layer.expert, "--layers");
      }
    }
  } else {
    p.dense =
        checked_product({stage_layers(model, plan, stage), layer_parameters_per_gpu(model, plan.tp)}, "--layers");
  }
  const int64_t word_embedding = word_embedding_per_rank(model, plan.tp);
  if (stage == 0)
    p.dense = checked_sum(p.dense, checked_sum(word_embedding, position_parameters(model), "--seq-len"), "--vocab");
  if (stage == plan.pp - 1) {
    p.dense += norm_parameters(model); // final norm
    if (plan.pp > 1 || !model.tie_embeddings)
      p.dense = checked_sum(p.dense, word_embedding, "--vocab"); // the tied output layer's copy, or its own matrix
    for (int64_t m = 0; m < model.moe.mtp_layers; ++m) { // Megatron-Core places the MTP modules on the last stage
      const LayerParameters layer = layer_parameter_split_per_gpu(model, plan, mtp_layer_index(model));
      const SplitParameters extra = mtp_extra(model);
      p.dense = sum_of({p.dense, layer.dense, extra.split / plan.tp, extra.replicated});
      p.expert = checked_sum(p.expert, layer.expert, "--mtp-layers");
    }
  }
  return p;
}

int64_t stage_parameters_per_gpu(const GptConfig& model, const ParallelPlan& plan, int64_t stage)
{
  return stage_parameter_split(model, plan, stage).total();
}

namespace {
// The parameters every TP rank of layer `layer` holds whole: the norms, the row-parallel biases, MLA's
// duplicated down projections and a MoE layer's router.
int64_t replicated_layer_parameters(const GptConfig& model, int64_t layer)
{
  return model.is_moe_layer(layer) ? moe_dense_layer(model).replicated
                                   : dense_layer(model, mlp_of(model, model.ffn())).replicated;
}
} // namespace

ShardedUnits sharded_units(const GptConfig& model, const ParallelPlan& plan, int64_t stage)
{
  ShardedUnits u;
  const int64_t word_embedding = word_embedding_per_rank(model, plan.tp);
  u.layer = layer_parameters_per_gpu(model, plan.tp);
  u.layers = stage_layers(model, plan, stage);
  if (stage == 0)
    u.embedding = checked_sum(word_embedding, position_parameters(model), "--seq-len");
  if (stage == plan.pp - 1) {
    u.output = norm_parameters(model);
    if (plan.pp > 1 || !model.tie_embeddings)
      u.output = checked_sum(u.output, word_embedding, "--vocab");
    u.output_gathered = plan.pp == 1 && model.tie_embeddings ? checked_sum(u.output, word_embedding, "--vocab")
                                                             : u.output;
  }
  return u;
}

int64_t peak_two_unit_bytes(const ShardedUnits& u, int64_t layer_bytes, int64_t other_bytes)
{
  const int64_t layer = checked_product({u.layer, layer_bytes}, "gathered units");
  const int64_t embedding = checked_product({u.embedding, other_bytes}, "gathered units");
  const int64_t output = checked_product({u.output_gathered, other_bytes}, "gathered units");
  if (u.layers == 0)
    return checked_sum(embedding, output, "gathered units");
  int64_t peak = checked_sum(std::max(embedding, output), layer, "gathered units");
  if (u.layers >= 2)
    peak = std::max(peak, checked_sum(layer, layer, "gathered units"));
  return peak;
}

int64_t sp_partial_parameters(const GptConfig& model, const ParallelPlan& plan, int64_t stage)
{
  // Per layer: the two norms and the biases of the two row-parallel linears.
  int64_t params = 0;
  for (int64_t chunk = 0; chunk < stage_chunks(plan); ++chunk) {
    const int64_t first = chunk_first_layer(model, plan, stage, chunk);
    for (int64_t l = first; l < first + chunk_layers(model, plan, stage, chunk); ++l)
      params = checked_sum(params, replicated_layer_parameters(model, l), "--layers");
  }
  if (stage == 0)
    params = checked_sum(params, position_parameters(model), "--seq-len");
  if (stage == plan.pp - 1)
    params += norm_parameters(model); // final norm
  return params;
}

} // namespace gputwin
