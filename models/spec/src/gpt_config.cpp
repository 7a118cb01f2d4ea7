#include "gputwin/models/gpt_config.hpp"

#include "gputwin/common/input_error.hpp"

namespace gputwin {

namespace {
void require_positive(int64_t value, const char* flag, const std::string& model)
{
  if (value <= 0)
    throw InputError(std::string(flag) + ": expected a positive integer for model '" + model + "', got " +
                     std::to_string(value));
}
} // namespace

std::string to_string(Activation a)
{
  switch (a) {
  case Activation::Gelu: return "gelu";
  case Activation::SwiGlu: return "swiglu";
  case Activation::SquaredRelu: return "squared-relu";
  }
  return "?";
}

std::string to_string(Norm n)
{
  return n == Norm::RmsNorm ? "rmsnorm" : "layernorm";
}

std::string to_string(PositionEmbedding p)
{
  return p == PositionEmbedding::Rope ? "rope" : "learned";
}

std::optional<Activation> parse_activation(const std::string& text)
{
  if (text == "gelu")
    return Activation::Gelu;
  if (text == "swiglu")
    return Activation::SwiGlu;
  if (text == "squared-relu")
    return Activation::SquaredRelu;
  return std::nullopt;
}

std::optional<Norm> parse_norm(const std::string& text)
{
  if (text == "layernorm")
    return Norm::LayerNorm;
  if (text == "rmsnorm")
    return Norm::RmsNorm;
  return std::nullopt;
}

std::optional<PositionEmbedding> parse_position(const std::string& text)
{
  if (text == "learned")
    return PositionEmbedding::Learned;
  if (text == "rope")
    return PositionEmbedding::Rope;
  return std::nullopt;
}

std::string to_string(RouterScore r)
{
  return r == RouterScore::Sigmoid ? "sigmoid" : "softmax";
}

int64_t GptConfig::moe_layer_count() const
{
  int64_t n = 0;
  for (int64_t l = 0; l < layers; ++l)
    n += is_moe_layer(l) ? 1 : 0;
  return n;
}

namespace {
void validate_moe(const GptConfig& model)
{
  const MoeConfig& m = model.moe;
  auto fail = [&](const char* flag, const std::string& what) {
    throw InputError(std::string(flag) + ": " + what + " for model '" + model.name + "'");
  };
  if (m.experts < 0)
    fail("--num-experts", "expected a positive integer, got " + std::to_string(m.experts));
  if (!m.enabled())
    return;
  if (m.topk <= 0)
    fail("--moe-topk", "expected a positive integer, got " + std::to_string(m.topk));
  if (m.topk > m.experts)
    fail("--moe-topk", "top-" + std::to_string(m.topk) + " of " + std::to_string(m.experts) +
                           " experts (expected at most the expert count)");
  if (m.expert_ffn_hidden <= 0)
    fail("--moe-ffn-hidden", "expected a positive integer, got " + std::to_string(m.expert_ffn_hidden));
  if (m.shared_experts < 0 || m.shared_ffn_hidden < 0)
    fail("--moe-shared-experts", "expected a non-negative count and width");
  if (m.dense_first_layers < 0 || m.dense_first_layers >= model.layers)
    fail("--moe-dense-first-layers", "expected 0 to layers - 1, got " + std::to_string(m.dense_first_layers));
  if (m.layer_period <= 0)
    fail("--moe-layer-period", "expected a positive integer, got " + std::to_string(m.layer_period));
  if (m.mtp_layers < 0)
    fail("--mtp-layers", "expected a non-negative integer, got " + std::to_string(m.mtp_layers));
  if (m.router_groups < 0 || (m.router_groups > 0 && (m.experts % m.router_groups != 0 || m.router_group_topk <= 0 ||
                                                      m.router_group_topk > m.router_groups)))
    fail("--moe-router-groups", "expected groups dividing the experts and 1 <= group top-k <= groups");
}

void validate_mla(const GptConfig& model)
{
  const MlaConfig& a = model.mla;
  if (!a.enabled())
    return;
  if (a.q_lora_rank < 0 || a.qk_nope_head_dim <= 0 || a.qk_rope_head_dim <= 0 || a.v_head_dim <= 0 ||
      a.qk_rope_head_dim % 2 != 0)
    throw InputError("mla: model '" + model.name +
                     "' needs q_lora_rank >= 0 and positive qk_nope_head_dim, even qk_rope_head_dim and v_head_dim");
}
} // namespace

void validate_model(const GptConfig& model)
{
  validate_moe(model);
  validate_mla(model);
  require_positive(model.hidden, "--hidden", model.name);
  require_positive(model.heads, "--heads", model.name);
  require_positive(model.layers, "--layers", model.name);
  require_positive(model.seq_len, "--seq-len", model.name);
  require_positive(model.vocab, "--vocab", model.name);
  if (model.query_groups < 0)
    throw InputError("--num-query-groups: expected a positive integer for model '" + model.name + "', got " +
                     std::to_string(model.query_groups));
  if (model.ffn_hidden < 0)
    throw InputError("--ffn-hidden: expected a positive integer for model '" + model.name + "', got " +
                     std::to_string(model.ffn_hidden));
  if (model.head_size < 0)
    throw InputError("--head-size: expected a positive integer for model '" + model.name + "', got " +
                     std::to_string(model.head_size));
  if (model.head_size == 0 && model.hidden % model.heads != 0)
    throw InputError("--heads: hidden size " + std::to_string(model.hidden) + " of model '" + model.name +
                     "' is not divisible by " + std::to_string(model.heads) +
                     " heads (expected heads to divide the hidden size)");
  if (model.heads % model.kv_heads() != 0)
    throw InputError("--num-query-groups: " + std::to_string(model.heads) + " heads of model '" + model.name +
                     "' are not divisible by " + std::to_string(model.kv_heads()) +
                     " query groups (expected a divisor of the head count)");
  if (model.position == PositionEmbedding::Rope && model.head_dim() % 2 != 0)
    throw InputError("--position: rope rotates pairs of channels, but the head size " +
                     std::to_string(model.head_dim()) + " of model '" + model.name + "' is odd (expected even)");
}

} // namespace gputwin
