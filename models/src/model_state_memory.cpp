#include "gputwin/models/model_state_memory.hpp"

#include "gputwin/models/checked_math.hpp"
#include "gputwin/models/parameter_count.hpp"

namespace gputwin {

ModelStateMemory model_state_memory(int64_t parameters, const ParallelPlan& plan, const StateBytesPerParameter& bytes)
{
  ModelStateMemory m;
  m.parameters = parameters;
  m.weight_bytes = checked_product({parameters, bytes.weight}, "weights");
  m.gradient_bytes = checked_product({parameters, bytes.gradient}, "gradients");
  const int64_t optimizer = checked_product({parameters, bytes.optimizer}, "optimizer states");
  // ZeRO-1 / distributed optimizer (Rajbhandari et al. 2020): each replica keeps 1/dp of the fp32 states.
  m.optimizer_bytes = plan.zero_stage >= 1 ? (optimizer + plan.dp - 1) / plan.dp : optimizer;
  m.total_bytes =
      checked_sum(checked_sum(m.weight_bytes, m.gradient_bytes, "model state"), m.optimizer_bytes, "model state");
  return m;
}

ModelStateMemory stage_model_state_memory(const GptConfig& model, const ParallelPlan& plan, int64_t stage,
                                          const StateBytesPerParameter& bytes)
{
  return model_state_memory(stage_parameters_per_gpu(model, plan, stage), plan, bytes);
}

} // namespace gputwin
