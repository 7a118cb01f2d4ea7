#include "gputwin/models/kernel_class.hpp"

#include <array>
#include <cctype>
#include <vector>

namespace gputwin {

namespace {

constexpr std::array<const char*, kernel_class_count> class_names = {
    "gemm", "layernorm", "softmax", "gelu", "dropout", "elementwise", "embedding", "cross_entropy", "optimizer",
    "other"};

// `name` in lower case, split at '.', '_', '-' and ' ' into tokens ("fc2.bias_dropout_add" -> fc2 bias dropout
// add).
std::vector<std::string> tokens_of(std::string_view name, std::string& lowered)
{
  lowered.clear();
  for (const char c : name)
    lowered += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<std::string> tokens(1);
  for (const char c : lowered) {
    if (c == '.' || c == '_' || c == '-' || c == ' ') {
      if (!tokens.back().empty())
        tokens.emplace_back();
    } else {
      tokens.back() += c;
    }
  }
  return tokens;
}

bool has_token(const std::vector<std::string>& tokens, std::initializer_list<const char*> wanted)
{
  for (const std::string& t : tokens)
    for (const char* w : wanted)
      if (t == w)
        return true;
  return false;
}

bool contains(const std::string& text, std::initializer_list<const char*> wanted)
{
  for (const char* w : wanted)
    if (text.find(w) != std::string::npos)
      return true;
  return false;
}

// "ln", "ln1", "ln2": the engine's and the generator's layernorm names.
bool is_ln_token(const std::string& t)
{
  if (t.size() < 2 || t[0] != 'l' || t[1] != 'n')
    return false;
  for (size_t i = 2; i < t.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(t[i])))
      return false;
  return true;
}

} // namespace

KernelClass classify_kernel(std::string_view name, bool gemm_shaped)
{
  if (gemm_shaped)
    return KernelClass::Gemm;
  std::string text;
  const std::vector<std::string> tokens = tokens_of(name, text);
  // Most specific first: "adam.cast" is the optimizer's, not a plain cast; "fc2.bias_dropout_add" and
  // "embedding.position_dropout" are dropout kernels; "log_softmax" inside a loss is the loss.
  if (contains(text, {"adam", "optimizer", "sgd", "lamb", "multi_tensor_apply"}))
    return KernelClass::Optimizer;
  // Megatron's gradient-buffer passes (op_vocabulary.hpp GradZero, GradCheckScale): PyTorch's fill, norm and
  // in-place multiply over the whole buffer, streaming elementwise kernels.
  if (contains(text, {"grad.zero", "grad.check_scale"}))
    return KernelClass::Elementwise;
  if (contains(text, {"cross_entropy", "crossentropy", "nll_loss"}) || has_token(tokens, {"loss"}))
    return KernelClass::CrossEntropy;
  if (contains(text, {"dropout"}))
    return KernelClass::Dropout;
  if (contains(text, {"softmax"}))
    return KernelClass::Softmax;
  if (contains(text, {"norm"}))
    return KernelClass::LayerNorm;
  for (const std::string& t : tokens)
    if (is_ln_token(t))
      return KernelClass::LayerNorm;
  // The activation class: GeLU was measured; SwiGLU's silu(gate) * up and squared ReLU (TE's srelu / dsrelu) are
  // the same kind of fused elementwise activation kernel (not measured on their own).
  if (contains(text, {"gelu", "swiglu", "silu", "relu"}))
    return KernelClass::Gelu;
  if (contains(text, {"rope", "rotary"})) // rotating Q and K: a streaming elementwise kernel
    return KernelClass::Elementwise;
  if (contains(text, {"embedding", "index_select", "indexselect"}))
    return KernelClass::Embedding;
  if (contains(text, {"copy", "memcpy", "elementwise", "bias", "residual", "cast", "add", "mul", "fill"}))
    return KernelClass::Elementwise;
  return KernelClass::Other;
}

std::string to_string(KernelClass c)
{
  return class_names[static_cast<size_t>(c)];
}

std::optional<KernelClass> parse_kernel_class(const std::string& text)
{
  for (size_t i = 0; i < class_names.size(); ++i)
    if (text == class_names[i])
      return static_cast<KernelClass>(i);
  return std::nullopt;
}

std::string kernel_class_names()
{
  std::string out;
  for (const char* n : class_names)
    out += (out.empty() ? "" : "|") + std::string(n);
  return out;
}

} // namespace gputwin
