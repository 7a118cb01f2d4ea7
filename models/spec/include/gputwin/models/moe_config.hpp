#pragma once
// Mixture-of-experts and multi-head latent attention: the architecture fields a GptConfig carries on top of the
// dense transformer. Notation: E experts, k experts per token (top-k), F_e the width of one expert's MLP.
// A MoE layer replaces the dense MLP by a router (h -> E logits), top-k selection, the routed experts (each a
// gated or plain MLP of width F_e) and optional shared experts every token passes through (DeepSeekMoE).
// Sources: Megatron-Core megatron/core/transformer/moe/ (moe_layer.py, router.py, token_dispatcher.py,
// experts.py) and multi_latent_attention.py; DeepSeek-V2 (arXiv:2405.04434) and DeepSeek-V3 (arXiv:2412.19437).

#include <cstdint>
#include <string>

namespace gputwin {

enum class RouterScore {
  Softmax, // softmax over the E logits, top-k of the probabilities (Mixtral, Qwen3, Megatron's default)
  Sigmoid, // sigmoid per expert, top-k, normalised over the k (DeepSeek-V3, aux-loss-free bias)
};

struct MoeConfig {
  int64_t experts = 0;              // E routed experts; 0: a dense model
  int64_t topk = 0;                 // k experts per token
  int64_t expert_ffn_hidden = 0;    // F_e, MLP width of one routed expert
  int64_t shared_experts = 0;       // shared experts every token passes through (DeepSeek: 1 or 2)
  int64_t shared_ffn_hidden = 0;    // total MLP width of the shared experts (Megatron's
                                    // --moe-shared-expert-intermediate-size); 0 with shared_experts > 0: k_s F_e
  int64_t dense_first_layers = 0;   // the first layers keep a dense MLP of width F (DeepSeek first_k_dense_replace)
  int64_t layer_period = 1;         // of the rest, every period-th layer is MoE: (layer + 1) % period == 0
                                    // (Llama 4 Maverick: 2, interleave_moe_layer_step), the others dense
  RouterScore router = RouterScore::Softmax;
  int64_t router_groups = 0;        // group-limited routing (DeepSeek-V3 n_group 8): 0 none
  int64_t router_group_topk = 0;    // groups a token may use (topk_group 4; each group is a node under EP)
  bool aux_loss = true;             // a load-balancing loss (compute only); false: aux-loss-free bias
  int64_t mtp_layers = 0;           // multi-token prediction modules (DeepSeek-V3: 1), each a layer + projection

  bool enabled() const { return experts > 0; }
  int64_t shared_width() const
  {
    return shared_experts <= 0 ? 0 : (shared_ffn_hidden > 0 ? shared_ffn_hidden : shared_experts * expert_ffn_hidden);
  }
};

// Multi-head latent attention (DeepSeek-V2 Section 2.1): queries through a rank-q_lora bottleneck (or a direct
// h -> a (d_nope + d_rope) projection when q_lora_rank is 0), keys and values through one rank-kv_lora latent
// plus a shared d_rope rotary key; each head's query/key is d_nope + d_rope wide, its value d_v.
struct MlaConfig {
  int64_t q_lora_rank = 0;     // 0: no query compression (DeepSeek-V2-Lite)
  int64_t kv_lora_rank = 0;    // > 0 turns MLA on
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;

  bool enabled() const { return kv_lora_rank > 0; }
  int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

std::string to_string(RouterScore r); // "softmax", "sigmoid"

} // namespace gputwin
