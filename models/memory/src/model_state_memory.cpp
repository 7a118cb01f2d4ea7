#include "gputwin/models/model_state_memory.hpp"

#include "gputwin/common/checked_math.hpp"
#include "gputwin/models/parameter_count.hpp"

namespace gputwin {

ModelStateMemory model_state_memory(int64_t parameters, const ParallelPlan& plan, const StateBytesPerParameter& bytes)
{
  ModelStateMemory m;
  m.parameters = parameters;
  m.weight_bytes = checked_product({parameters, bytes.weight}, "weights");
  m.gradient_bytes = checked_product({parameters, bytes.gradient}, "gradients");
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
  if (plan.fp8) {
    // Transformer Engine caches each linear weight in FP8 with its transpose for the iteration (1 + 1 bytes).
    const int64_t layer_weights = checked_product(
        {stage_layers(model, plan, stage), layer_parameters_per_gpu(model, plan.tp), 2}, "FP8 weights");
    m.weight_bytes = checked_sum(m.weight_bytes, layer_weights, "FP8 weights");
    m.total_bytes = checked_sum(m.total_bytes, layer_weights, "FP8 weights");
  }
  return m;
}

} // namespace gputwin
