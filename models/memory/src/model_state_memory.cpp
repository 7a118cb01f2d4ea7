#include "gputwin/models/model_state_memory.hpp"

#include "gputwin/common/checked_math.hpp"
#include "gputwin/models/activation_memory.hpp"
#include "gputwin/models/parameter_count.hpp"

namespace gputwin {

namespace {

int64_t sum_of(std::initializer_list<int64_t> terms, const char* what)
{
  int64_t sum = 0;
  for (const int64_t term : terms)
    sum = checked_sum(sum, term, what);
  return sum;
}

} // namespace

ModelStateMemory model_state_memory(int64_t parameters, const ParallelPlan& plan, const StateBytesPerParameter& bytes)
{
  ModelStateMemory m;
  m.parameters = parameters;
  m.weight_bytes = checked_product({parameters, bytes.weight}, "weights");
  // Megatron-Core's gradient buffer is FP32 with BF16 training unless --grad-reduce-in-bf16
  // (megatron/training/arguments.py sets accumulate_allreduce_grads_in_fp32 when main_grads_dtype is fp32).
  m.gradient_bytes = checked_product({parameters, plan.grad_reduce_bf16 ? 2 : bytes.gradient}, "gradients");
  const int64_t optimizer = checked_product({parameters, bytes.optimizer}, "optimizer states");
  // ZeRO-1 / distributed optimizer (Rajbhandari et al. 2020): each replica keeps 1/dp of the fp32 states; with
  // context parallelism Megatron-Core shards over the dp x cp ranks that hold the same parameters.
  const int64_t shards = plan.dp * plan.cp;
  m.optimizer_bytes = plan.zero_stage >= 1 ? (optimizer + shards - 1) / shards : optimizer;
  m.total_bytes =
      checked_sum(checked_sum(m.weight_bytes, m.gradient_bytes, "model state"), m.optimizer_bytes, "model state");
  return m;
}

ModelStateMemory stage_model_state_memory(const GptConfig& model, const ParallelPlan& plan, int64_t stage,
                                          const StateBytesPerParameter& bytes)
{
  ModelStateMemory m = model_state_memory(stage_parameters_per_gpu(model, plan, stage), plan, bytes);
  const int64_t layer_parameters =
      checked_product({stage_layers(model, plan, stage), layer_parameters_per_gpu(model, plan.tp)}, "FP8 weights");
  if (plan.fp8 && plan.fp8_param_gather) {
    // The layers' weights are FP8 parameters (1 byte, all-gathered in FP8): the BF16 copy is gone and TE keeps
    // only the FP8 transpose besides (1 byte).
    m.weight_bytes = checked_sum(m.weight_bytes, -layer_parameters, "FP8 weights");
    m.fp8_cache_bytes = layer_parameters;
  } else if (plan.fp8) {
    m.fp8_cache_bytes = checked_product({layer_parameters, 2}, "FP8 weights"); // FP8 weight + FP8 transpose
  }
  if (megatron_core_te_memory(plan) && stage_layers(model, plan, stage) > 0) {
    // One layer's linear weights per GPU: QKV h (h + 2 g d), projection h^2, fc1 h F', fc2 F h, split by t.
    const int64_t width = sum_of(
        {model.hidden, 2 * model.kv_dim(), model.hidden, model.fc1_width(), model.ffn()}, "weight gradients");
    m.wgrad_placeholder_bytes = checked_product({2, model.hidden, width}, "weight gradients") / plan.tp;
  }
  m.total_bytes = sum_of({m.weight_bytes, m.gradient_bytes, m.optimizer_bytes, m.fp8_cache_bytes,
                               m.wgrad_placeholder_bytes},
                              "model state");
  return m;
}

} // namespace gputwin
