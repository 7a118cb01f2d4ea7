#include "gputwin/models/model_state_memory.hpp"

#include "gputwin/common/checked_math.hpp"
#include "gputwin/models/activation_memory.hpp"
#include "gputwin/models/parameter_count.hpp"

#include <algorithm>

namespace gputwin {

namespace {

int64_t sum_of(std::initializer_list<int64_t> terms, const char* what)
{
  int64_t sum = 0;
  for (const int64_t term : terms)
    sum = checked_sum(sum, term, what);
  return sum;
}

// `bytes` as one rank keeps them: divided over the dp x cp ranks (rounded up) when the plan's ZeRO stage is at
// least `stage`, whole otherwise.
int64_t shard_of(int64_t bytes, const ParallelPlan& plan, int stage, int64_t shards)
{
  return plan.zero_stage >= stage ? (bytes + shards - 1) / shards : bytes;
}

int64_t shard_of(int64_t bytes, const ParallelPlan& plan, int stage)
{
  return shard_of(bytes, plan, stage, plan.dp * plan.cp);
}

// The transformer layers' parameters of one GPU of `stage` (dense and expert), without embedding and output layer.
int64_t stage_layer_parameters(const GptConfig& model, const ParallelPlan& plan, int64_t stage)
{
  if (!model.moe.enabled())
    return checked_product({stage_layers(model, plan, stage), layer_parameters_per_gpu(model, plan.tp)}, "FP8 weights");
  int64_t n = 0;
  for (int64_t chunk = 0; chunk < stage_chunks(plan); ++chunk) {
    const int64_t first = chunk_first_layer(model, plan, stage, chunk);
    for (int64_t l = first; l < first + chunk_layers(model, plan, stage, chunk); ++l)
      n = checked_sum(n, layer_parameter_split_per_gpu(model, plan, l).total(), "FP8 weights");
  }
  return n;
}

} // namespace

ModelStateMemory model_state_memory(int64_t parameters, const ParallelPlan& plan, const StateBytesPerParameter& bytes)
{
  ModelStateMemory m;
  m.parameters = parameters;
  // ZeRO (Rajbhandari et al. 2020): each of the dp x cp ranks that hold the same parameters keeps 1/(dp x cp) of
  // what its stage shards (with context parallelism Megatron-Core shards over dp x cp), rounded up (shard_of).
  m.weight_bytes = plan.fsdp ? 0 : shard_of(checked_product({parameters, bytes.weight}, "weights"), plan, 3);
  // Megatron-Core's gradient buffer is FP32 with BF16 training unless --grad-reduce-in-bf16
  // (megatron/training/arguments.py sets accumulate_allreduce_grads_in_fp32 when main_grads_dtype is fp32); FSDP2's
  // sharded gradient is in its reduce dtype, FP32 in TorchTitan (mixed_precision_reduce).
  m.gradient_bytes =
      shard_of(checked_product({parameters, plan.grad_reduce_bf16 ? 2 : bytes.gradient}, "gradients"), plan, 2);
  m.optimizer_bytes = shard_of(checked_product({parameters, bytes.optimizer}, "optimizer states"), plan, 1);
  m.total_bytes = sum_of({m.weight_bytes, m.gradient_bytes, m.optimizer_bytes}, "model state");
  return m;
}

ModelStateMemory expert_model_state_memory(int64_t dense_parameters, int64_t expert_parameters,
                                           const ParallelPlan& plan, const StateBytesPerParameter& bytes)
{
  ModelStateMemory m = model_state_memory(dense_parameters, plan, bytes);
  // The experts' states: the same bytes per parameter, ZeRO-1 sharding their optimizer states over the expert
  // data-parallel ranks (Megatron-Core's distributed optimizer keeps a separate buffer per expert-DP group).
  const int64_t edp = plan.expert_dp();
  m.parameters = checked_sum(m.parameters, expert_parameters, "parameters");
  m.weight_bytes = checked_sum(m.weight_bytes, checked_product({expert_parameters, bytes.weight}, "weights"), "weights");
  m.gradient_bytes = checked_sum(
      m.gradient_bytes, checked_product({expert_parameters, plan.grad_reduce_bf16 ? 2 : bytes.gradient}, "gradients"),
      "gradients");
  m.optimizer_bytes = checked_sum(
      m.optimizer_bytes,
      shard_of(checked_product({expert_parameters, bytes.optimizer}, "optimizer states"), plan, 1, edp),
      "optimizer states");
  m.total_bytes = sum_of({m.weight_bytes, m.gradient_bytes, m.optimizer_bytes}, "model state");
  return m;
}

ModelStateMemory stage_model_state_memory(const GptConfig& model, const ParallelPlan& plan, int64_t stage,
                                          const StateBytesPerParameter& bytes)
{
  const StageParameters split = stage_parameter_split(model, plan, stage);
  const int64_t parameters = split.total();
  ModelStateMemory m = model.moe.enabled() ? expert_model_state_memory(split.dense, split.expert, plan, bytes)
                                           : model_state_memory(parameters, plan, bytes);
  const int64_t layer_parameters = stage_layer_parameters(model, plan, stage);
  const ShardedUnits units = sharded_units(model, plan, stage);
  // Quantized weights in the plan's format: FP8 1 byte per parameter, MXFP8 and NVFP4 with their block scales
  // (quantized_tensor_bytes); TE keeps a row-wise and a column-wise copy of each (MXFP8/NVFP4: both quantized from
  // BF16, recipe/__init__.py), as it keeps the FP8 weight and its transpose.
  const int64_t quantized_layer_weights = quantized_tensor_bytes(plan.precision, layer_parameters);
  if (plan.quantized() && plan.fp8_param_gather) {
    // The layers' weights are quantized parameters (all-gathered so): the BF16 copy is gone and TE keeps only the
    // other copy besides (the FP8 transpose) -- under ZeRO-3 only while a layer is gathered.
    const int64_t bf16_weights = checked_product({parameters - layer_parameters, bytes.weight}, "weights");
    const int64_t weights = checked_sum(bf16_weights, quantized_layer_weights, "FP8 weights");
    m.weight_bytes = plan.zero_stage == 3 ? shard_of(weights, plan, 3) : weights;
    m.fp8_cache_bytes = plan.zero_stage == 3 ? checked_product({std::min<int64_t>(units.layers, 2),
                                                                quantized_tensor_bytes(plan.precision, units.layer)},
                                                               "FP8 weights")
                                             : quantized_layer_weights;
  } else if (plan.quantized()) {
    m.fp8_cache_bytes = checked_product({quantized_layer_weights, 2}, "FP8 weights"); // the weight + its transpose
  }
  if (megatron_core_te_memory(plan) && stage_layers(model, plan, stage) > 0) {
    // One layer's linear weights per GPU: QKV h (a d + 2 g d), projection a d h, fc1 h F', fc2 F h, split by t
    // (a d = h unless the head size is set).
    const int64_t width = sum_of({model.attention_width(), 2 * model.kv_dim(), model.attention_width(),
                                  model.fc1_width(), model.ffn()},
                                 "weight gradients");
    m.wgrad_placeholder_bytes = checked_product({2, model.hidden, width}, "weight gradients") / plan.tp;
  }
  if (plan.zero_stage == 3 && plan.fp8_param_gather) { // the layers gathered in their format, scales included
    ShardedUnits quantized = units;
    quantized.layer = quantized_tensor_bytes(plan.precision, units.layer);
    m.gathered_weight_bytes = peak_two_unit_bytes(quantized, 1, bytes.weight);
  } else if (plan.zero_stage == 3) {
    m.gathered_weight_bytes = peak_two_unit_bytes(units, bytes.weight, bytes.weight);
  }
  if (plan.zero_stage >= 2) {
    const int64_t gradient = plan.grad_reduce_bf16 ? 2 : bytes.gradient;
    m.gathered_gradient_bytes = peak_two_unit_bytes(units, gradient, gradient);
  }
  m.total_bytes = sum_of({m.weight_bytes, m.gradient_bytes, m.optimizer_bytes, m.fp8_cache_bytes,
                          m.wgrad_placeholder_bytes, m.gathered_weight_bytes, m.gathered_gradient_bytes},
                         "model state");
  return m;
}

} // namespace gputwin
