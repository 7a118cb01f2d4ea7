#include "gputwin/models/parameter_count.hpp"

#include "gputwin/models/checked_math.hpp"

namespace gputwin {

int64_t padded_vocab(const GptConfig& model, int64_t tp)
{
  const int64_t multiple = checked_product({128, tp}, "--tp");
  return checked_product({(model.vocab + multiple - 1) / multiple, multiple}, "--vocab");
}

int64_t layer_parameters(const GptConfig& model)
{
  const int64_t h = model.hidden;
  return checked_sum(checked_product({12, h, h}, "--hidden"), 13 * h, "--hidden");
}

int64_t model_parameters(const GptConfig& model, int64_t tp)
{
  const int64_t h = model.hidden;
  int64_t total = checked_product({model.layers, layer_parameters(model)}, "--layers");
  total = checked_sum(total, checked_product({padded_vocab(model, tp), h}, "--vocab"), "--vocab");
  total = checked_sum(total, checked_product({model.seq_len, h}, "--seq-len"), "--seq-len");
  return checked_sum(total, 2 * h, "--hidden");
}

int64_t layer_parameters_per_gpu(const GptConfig& model, int64_t tp)
{
  const int64_t h = model.hidden;
  // h is a multiple of t because heads are (validate_plan), so every split below is exact.
  const int64_t split = checked_sum(checked_product({12, h, h}, "--hidden"), 7 * h, "--hidden") / tp;
  return split + 6 * h;
}

int64_t stage_parameters_per_gpu(const GptConfig& model, const ParallelPlan& plan, int64_t stage)
{
  const int64_t h = model.hidden;
  const int64_t layers = model.layers / plan.pp;
  const int64_t word_embedding = checked_product({padded_vocab(model, plan.tp) / plan.tp, h}, "--vocab");
  int64_t params = checked_product({layers, layer_parameters_per_gpu(model, plan.tp)}, "--layers");
  if (stage == 0)
    params = checked_sum(params, checked_sum(word_embedding, model.seq_len * h, "--seq-len"), "--vocab");
  if (stage == plan.pp - 1) {
    params += 2 * h; // final layernorm
    if (plan.pp > 1)
      params = checked_sum(params, word_embedding, "--vocab"); // tied output layer's copy
  }
  return params;
}

int64_t sp_partial_parameters(const GptConfig& model, const ParallelPlan& plan, int64_t stage)
{
  const int64_t h = model.hidden;
  // Per layer: two layernorms (gamma, beta) and the biases of the two row-parallel linears.
  int64_t params = checked_product({model.layers / plan.pp, 6 * h}, "--layers");
  if (stage == 0)
    params = checked_sum(params, checked_product({model.seq_len, h}, "--seq-len"), "--seq-len"); // positions
  if (stage == plan.pp - 1)
    params += 2 * h; // final layernorm
  return params;
}

} // namespace gputwin
