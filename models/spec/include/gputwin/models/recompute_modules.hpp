#pragma once
// Megatron-Core's selective recompute by submodule (--recompute-granularity selective --recompute-modules ...;
// megatron/core/transformer/transformer_config.py recompute_modules): which parts of a layer drop their saved
// activations in forward and run again in backward. "core_attn", "mlp", "moe" and "shared_experts" are whole-module
// checkpoints (tensor_parallel.checkpoint: the module's forward reruns when backward reaches its output, its TP and
// EP communication included); "layernorm", "moe_act" and "mla_up_proj" discard their output once its consumer has
// run and rerun just that piece when backward reaches the consumer (CheckpointWithoutOutput).

#include <cstdint>
#include <string>

namespace gputwin {

enum class RecomputeModule : uint8_t {
  CoreAttn,      // the attention core (attention.py _checkpointed_attention_forward), fused kernels too
  Layernorm,     // the layer's separate norms: input_layernorm (MLA) and pre_mlp_layernorm (MoE layers); TE fuses
                 // the others into the next linear layer (gpt_layer_specs.py: IdentityOp, nothing to recompute)
  MoeAct,        // the experts' activation function (moe/experts.py TEGroupedMLP activation_checkpoint)
  MlaUpProj,     // MLA's q and kv up projections with their norms and the RoPE application
                 // (multi_latent_attention.py qkv_up_checkpoint)
  Mlp,           // a dense layer's whole MLP (transformer_layer.py recompute_mlp; not MoE layers)
  Moe,           // a MoE layer's whole MLP: router, dispatch, experts, combine, shared experts (moe_layer.py)
  SharedExperts, // a MoE layer's shared experts (moe_layer.py shared_experts_recompute)
};

// A set of RecomputeModule; empty: --recompute selective as Korthikanti et al. 2022 define it (the unfused attention
// core; a fused attention kernel stores nothing for it to drop).
class RecomputeModules {
public:
  bool empty() const { return bits_ == 0; }
  bool has(RecomputeModule m) const { return (bits_ >> static_cast<unsigned>(m)) & 1u; }
  void add(RecomputeModule m) { bits_ = static_cast<uint8_t>(bits_ | (1u << static_cast<unsigned>(m))); }
  bool operator==(const RecomputeModules&) const = default;

private:
  uint8_t bits_ = 0;
};

// Megatron-Core's name of a module ("core_attn", "layernorm", "moe_act", "mla_up_proj", "mlp", "moe",
// "shared_experts").
std::string to_string(RecomputeModule m);
// The set as Megatron-Core lists it, comma-separated in the order above ("" when empty).
std::string to_string(RecomputeModules modules);
// Parses a comma-separated list of Megatron-Core names (repeats allowed, order free). Throws InputError naming
// `field` and the allowed names for an unknown or empty name.
RecomputeModules parse_recompute_modules(const std::string& text, const std::string& field);

} // namespace gputwin
