#include "gputwin/engine/train/engine_plan_support.hpp"

#include "gputwin/common/input_error.hpp"

#include <string>

namespace gputwin::engine {

void check_engine_supports_plan(const GptConfig& model, const ParallelPlan& plan)
{
  if (model.ffn() % plan.tp != 0)
    throw InputError("--ffn-hidden: the MLP width " + std::to_string(model.ffn()) + " of model '" + model.name +
                     "' is not divisible by tensor-parallel size " + std::to_string(plan.tp) +
                     " (expected --tp to divide --ffn-hidden: each rank holds F/t columns)");
  if (plan.cp > 1)
    throw InputError("--cp: the engine does not run context parallelism yet (expected --cp 1; the simulator models "
                     "it)");
  if (plan.fp8)
    throw InputError("--fp8: the engine does not run FP8 linear layers yet (expected bf16, without --fp8; the "
                     "simulator models them)");
  if (plan.zero_stage > 1 || plan.fsdp)
    throw InputError("--zero: the engine implements ZeRO 0 and 1 (got " +
                     (plan.fsdp ? std::string("--fsdp") : "--zero " + std::to_string(plan.zero_stage)) +
                     "; the simulator models ZeRO-2, ZeRO-3 and FSDP)");
}

} // namespace gputwin::engine
