#include "gputwin/engine/train/engine_plan_support.hpp"

#include "gputwin/common/input_error.hpp"

#include <string>

namespace gputwin::engine {

namespace {

// The mixture-of-experts layer the engine runs: softmax top-k router, alltoall dispatch, dropless, experts whole
// on their EP rank (etp 1), no shared experts, ZeRO 0.
void check_engine_supports_moe(const GptConfig& model, const ParallelPlan& plan)
{
  const MoeConfig& moe = model.moe;
  const auto refuse = [](const std::string& flag, const std::string& what) {
    throw InputError(flag + ": the engine does not run " + what + " yet (the simulator models it)");
  };
  if (model.mla.enabled())
    refuse("--model", "multi-head latent attention (model '" + model.name + "')");
  if (!moe.enabled())
    return;
  if (plan.expert_tp() != 1)
    throw InputError("--etp: the engine runs each expert whole on its EP rank (expected --etp 1, got expert "
                     "tensor-parallel size " + std::to_string(plan.expert_tp()) + "; the simulator models etp > 1)");
  if (moe.shared_experts > 0)
    refuse("--moe-shared-experts", "shared experts (expected 0)");
  if (moe.router != RouterScore::Softmax || moe.router_groups > 0)
    refuse("--num-experts", "a sigmoid or group-limited router (expected the softmax top-k router)");
  if (moe.mtp_layers > 0)
    refuse("--num-experts", "multi-token prediction layers");
  if (plan.dispatcher != MoeDispatcher::AllToAll)
    refuse("--moe-dispatcher", to_string(plan.dispatcher) + " dispatch (expected alltoall)");
  if (plan.capacity_factor > 0)
    refuse("--moe-capacity-factor", "token dropping (expected dropless: no capacity factor)");
  if (plan.zero_stage != 0)
    refuse("--zero", "ZeRO-1 with experts (expected --zero 0)");
}

} // namespace

void check_engine_supports_plan(const GptConfig& model, const ParallelPlan& plan)
{
  check_engine_supports_moe(model, plan);
  if (model.head_size > 0 && model.head_size * model.heads != model.hidden)
    throw InputError("--head-size: the engine's attention is hidden / heads wide per head (got head size " +
                     std::to_string(model.head_size) + " with hidden " + std::to_string(model.hidden) + " and " +
                     std::to_string(model.heads) + " heads; the simulator models it)");
  if (model.ffn() % plan.tp != 0)
    throw InputError("--ffn-hidden: the MLP width " + std::to_string(model.ffn()) + " of model '" + model.name +
                     "' is not divisible by tensor-parallel size " + std::to_string(plan.tp) +
                     " (expected --tp to divide --ffn-hidden: each rank holds F/t columns)");
  if (plan.cp > 1)
    throw InputError("--cp: the engine does not run context parallelism yet (expected --cp 1; the simulator models "
                     "it)");
  if (plan.precision == GemmPrecision::Fp8)
    throw InputError("--fp8: the engine does not run FP8 linear layers yet (expected bf16, without --fp8; the "
                     "simulator models them)");
  if (plan.precision != GemmPrecision::Bf16)
    throw InputError("--precision: the engine does not run " + to_string(plan.precision) +
                     " linear layers (expected bf16; the simulator models them)");
  if (plan.zero_stage > 1 || plan.fsdp)
    throw InputError("--zero: the engine implements ZeRO 0 and 1 (got " +
                     (plan.fsdp ? std::string("--fsdp") : "--zero " + std::to_string(plan.zero_stage)) +
                     "; the simulator models ZeRO-2, ZeRO-3 and FSDP)");
}

} // namespace gputwin::engine
