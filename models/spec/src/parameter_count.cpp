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

// Elements of one norm's parameters: gamma and beta (LayerNorm), gamma alone (RMSNorm).
int64_t norm_parameters(const GptConfig& model)
{
  return model.norm == Norm::RmsNorm ? model.hidden : 2 * model.hidden;
}

// The weights and biases of one layer's linears that tensor parallelism splits: QKV h x (h + 2 kv) and fc1
// h x fc1 (weights and biases: column-parallel), projection h x h and fc2 F x h (weights: row-parallel).
int64_t split_layer_parameters(const GptConfig& model)
{
  const int64_t h = model.hidden, qkv = h + 2 * model.kv_dim(), fc1 = model.fc1_width(), f = model.ffn();
  int64_t n = checked_sum(checked_product({h, qkv}, "--hidden"), checked_product({h, h}, "--hidden"), "--hidden");
  n = checked_sum(n, checked_product({h, fc1}, "--ffn-hidden"), "--ffn-hidden");
  n = checked_sum(n, checked_product({f, h}, "--ffn-hidden"), "--ffn-hidden");
  if (model.bias)
    n = checked_sum(n, qkv + fc1, "--ffn-hidden");
  return n;
}

// The parameters every TP rank of a layer holds whole: the two norms and the row-parallel biases.
int64_t replicated_layer_parameters(const GptConfig& model)
{
  return 2 * norm_parameters(model) + (model.bias ? 2 * model.hidden : 0);
}

int64_t position_parameters(const GptConfig& model)
{
  return model.position == PositionEmbedding::Learned ? checked_product({model.seq_len, model.hidden}, "--seq-len")
                                                      : 0;
}

} // namespace

int64_t layer_parameters(const GptConfig& model)
{
  return checked_sum(split_layer_parameters(model), replicated_layer_parameters(model), "--hidden");
}

int64_t model_parameters(const GptConfig& model, int64_t tp)
{
  const int64_t h = model.hidden;
  const int64_t word = checked_product({padded_vocab(model, tp), h}, "--vocab");
  int64_t total = checked_product({model.layers, layer_parameters(model)}, "--layers");
  total = checked_sum(total, word, "--vocab");
  if (!model.tie_embeddings)
    total = checked_sum(total, word, "--vocab"); // the output layer's own matrix
  total = checked_sum(total, position_parameters(model), "--seq-len");
  return checked_sum(total, norm_parameters(model), "--hidden");
}

int64_t layer_parameters_per_gpu(const GptConfig& model, int64_t tp)
{
  // Heads, query groups and F are multiples of t (validate_plan), so every split below is exact.
  return split_layer_parameters(model) / tp + replicated_layer_parameters(model);
}

int64_t stage_parameters_per_gpu(const GptConfig& model, const ParallelPlan& plan, int64_t stage)
{
  const int64_t h = model.hidden;
  const int64_t word_embedding = checked_product({padded_vocab(model, plan.tp) / plan.tp, h}, "--vocab");
  int64_t params =
      checked_product({stage_layers(model, plan, stage), layer_parameters_per_gpu(model, plan.tp)}, "--layers");
  if (stage == 0)
    params = checked_sum(params, checked_sum(word_embedding, position_parameters(model), "--seq-len"), "--vocab");
  if (stage == plan.pp - 1) {
    params += norm_parameters(model); // final norm
    if (plan.pp > 1 || !model.tie_embeddings)
      params = checked_sum(params, word_embedding, "--vocab"); // the tied output layer's copy, or its own matrix
  }
  return params;
}

ShardedUnits sharded_units(const GptConfig& model, const ParallelPlan& plan, int64_t stage)
{
  ShardedUnits u;
  const int64_t word_embedding = checked_product({padded_vocab(model, plan.tp) / plan.tp, model.hidden}, "--vocab");
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
  int64_t params = checked_product({stage_layers(model, plan, stage), replicated_layer_parameters(model)}, "--layers");
  if (stage == 0)
    params = checked_sum(params, position_parameters(model), "--seq-len");
  if (stage == plan.pp - 1)
    params += norm_parameters(model); // final norm
  return params;
}

} // namespace gputwin
