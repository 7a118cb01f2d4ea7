#include "gputwin/models/gpt_config.hpp"

#include "gputwin/models/input_error.hpp"

namespace gputwin {

namespace {
void require_positive(int64_t value, const char* flag, const std::string& model)
{
  if (value <= 0)
    throw InputError(std::string(flag) + ": expected a positive integer for model '" + model + "', got " +
                     std::to_string(value));
}
} // namespace

void validate_model(const GptConfig& model)
{
  require_positive(model.hidden, "--hidden", model.name);
  require_positive(model.heads, "--heads", model.name);
  require_positive(model.layers, "--layers", model.name);
  require_positive(model.seq_len, "--seq-len", model.name);
  require_positive(model.vocab, "--vocab", model.name);
  if (model.hidden % model.heads != 0)
    throw InputError("--heads: hidden size " + std::to_string(model.hidden) + " of model '" + model.name +
                     "' is not divisible by " + std::to_string(model.heads) +
                     " heads (expected heads to divide the hidden size)");
}

} // namespace gputwin
