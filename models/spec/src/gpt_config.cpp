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

void validate_model(const GptConfig& model)
{
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
  if (model.hidden % model.heads != 0)
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
