#include "gputwin/config/hf_config.hpp"

#include "gputwin/common/checked_math.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/common/yaml_fields.hpp"

#include <optional>

namespace gputwin::config {

namespace {

// A JSON document is a YAML one: yaml-cpp parses it and the typed readers of yaml_fields.hpp apply. JSON adds two
// checks: `null` is an absent field (transformers writes "sliding_window": null), and a quoted scalar is a string,
// never a number or a boolean.
bool present(const YAML::Node& root, const char* key)
{
  const YAML::Node node = root[key];
  return node && !node.IsNull();
}

void reject_string(const YamlFile& file, const YAML::Node& root, const char* key, const char* expected)
{
  const YAML::Node node = root[key];
  if (present(root, key) && node.IsScalar() && node.Tag() == "!")
    throw InputError(location(file, node) + ": " + key + ": expected " + expected + ", got the string \"" +
                     node.Scalar() + "\"");
}

int64_t integer(const YamlFile& file, const YAML::Node& root, const char* key)
{
  reject_string(file, root, key, "a positive integer");
  return require_positive_integer(file, root, key);
}

std::optional<int64_t> optional_integer(const YamlFile& file, const YAML::Node& root, const char* key)
{
  if (!present(root, key))
    return std::nullopt;
  return integer(file, root, key);
}

bool boolean(const YamlFile& file, const YAML::Node& root, const char* key, bool fallback)
{
  if (!present(root, key))
    return fallback;
  reject_string(file, root, key, "true or false");
  return optional_boolean(file, root, key, fallback);
}

double probability(const YamlFile& file, const YAML::Node& root, const char* key)
{
  if (!present(root, key))
    return 0;
  reject_string(file, root, key, "a number from 0 to 1");
  const double p = require_number(file, root, key, 0, false);
  if (p > 1)
    throw InputError(location(file, root[key]) + ": " + key + ": expected a number from 0 to 1, got " +
                     root[key].Scalar());
  return p;
}

std::optional<std::string> text(const YamlFile& file, const YAML::Node& root, const char* key)
{
  return present(root, key) ? optional_string(file, root, key) : std::nullopt;
}

[[noreturn]] void cannot_express(const YamlFile& file, const YAML::Node& root, const char* key, const std::string& what)
{
  throw InputError(location(file, root[key]) + ": " + key + ": " + what);
}

std::string file_stem(const std::string& path)
{
  const size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = name.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

// The fields every dense Llama-style decoder of transformers shares (LlamaConfig and the configurations modelled on
// it): a gated SiLU MLP (gate and up projections, intermediate_size wide), RMSNorm, rotary positions.
GptConfig read_dense_decoder(const YamlFile& file, const YAML::Node& root)
{
  GptConfig m;
  m.name = file_stem(file.path);
  m.hidden = integer(file, root, "hidden_size");
  m.heads = integer(file, root, "num_attention_heads");
  m.layers = integer(file, root, "num_hidden_layers");
  m.ffn_hidden = integer(file, root, "intermediate_size");
  m.vocab = integer(file, root, "vocab_size");
  m.seq_len = integer(file, root, "max_position_embeddings");
  m.query_groups = optional_integer(file, root, "num_key_value_heads").value_or(m.heads); // transformers' default
  if (m.hidden % m.heads != 0)
    cannot_express(file, root, "num_attention_heads",
                   std::to_string(m.heads) + " does not divide hidden_size " + std::to_string(m.hidden) +
                       " (expected heads of hidden_size / num_attention_heads)");
  if (m.head_dim() % 2 != 0) // validate_model's rule, named by the file's field
    cannot_express(file, root, "num_attention_heads",
                   "the head size hidden_size / num_attention_heads = " + std::to_string(m.head_dim()) +
                       " is odd (expected even: RoPE rotates pairs of channels)");
  if (m.heads % m.query_groups != 0)
    cannot_express(file, root, "num_key_value_heads",
                   std::to_string(m.query_groups) + " does not divide num_attention_heads " + std::to_string(m.heads) +
                       " (expected a divisor of the head count)");
  if (const std::optional<int64_t> head_dim = optional_integer(file, root, "head_dim"); head_dim && *head_dim != m.head_dim())
    cannot_express(file, root, "head_dim",
                   std::to_string(*head_dim) + " is not hidden_size / num_attention_heads = " +
                       std::to_string(m.head_dim()) + " (expected the default head size; gputwin's model has no other)");
  const std::string act = text(file, root, "hidden_act").value_or("silu");
  if (act != "silu")
    cannot_express(file, root, "hidden_act", "expected silu (the gated MLP gputwin models as SwiGLU), got '" + act + "'");
  m.activation = Activation::SwiGlu;
  m.norm = Norm::RmsNorm;
  m.position = PositionEmbedding::Rope;
  m.tie_embeddings = boolean(file, root, "tie_word_embeddings", false);
  // These decoders have attention dropout only; gputwin switches hidden and attention dropout together.
  if (probability(file, root, "attention_dropout") > 0)
    cannot_express(file, root, "attention_dropout",
                   root["attention_dropout"].Scalar() + ": dropout on attention alone is not modelled (expected 0.0)");
  m.dropout = false;
  m.bias = false;
  return m;
}

// Sliding-window attention (Mistral's, Qwen's with use_sliding_window) is timed as full causal attention.
void note_sliding_window(const YamlFile& file, const YAML::Node& root, HfModel& out)
{
  if (const std::optional<int64_t> window = optional_integer(file, root, "sliding_window");
      window && *window < out.model.seq_len)
    out.notes.push_back(file.path + ": sliding_window " + std::to_string(*window) +
                        ": modelled as full causal attention over the sequence (exact for --seq-len up to the window)");
}

// gputwin's linear layers have biases all or none (GptConfig::bias); a configuration with some is refused here.
void require_all_or_no_biases(const YamlFile& file, const YAML::Node& root, const char* key, bool biases, bool others,
                              const char* others_name)
{
  if (biases != others)
    cannot_express(file, root, key,
                   std::string(biases ? "true" : "false") + " with " + others_name + " " + (others ? "true" : "false") +
                       ": gputwin's linear layers have biases all or none (expected both the same)");
}

// transformers LlamaForCausalLM: attention_bias on q/k/v/o, mlp_bias on gate/up/down.
void read_llama(const YamlFile& file, const YAML::Node& root, HfModel& out)
{
  out.model = read_dense_decoder(file, root);
  const bool attention_bias = boolean(file, root, "attention_bias", false);
  const bool mlp_bias = boolean(file, root, "mlp_bias", false);
  if (attention_bias)
    require_all_or_no_biases(file, root, "attention_bias", true, mlp_bias, "mlp_bias");
  else
    require_all_or_no_biases(file, root, "mlp_bias", mlp_bias, false, "attention_bias");
  out.model.bias = attention_bias;
}

// MistralForCausalLM: Llama's layer without biases, with sliding-window attention in the 7B v0.1.
void read_mistral(const YamlFile& file, const YAML::Node& root, HfModel& out)
{
  out.model = read_dense_decoder(file, root);
  note_sliding_window(file, root, out);
}

// Qwen2ForCausalLM: biases on q/k/v only (no field: the architecture has them). Approximated as no biases: the
// q/k/v biases are (heads + 2 x kv heads) x head_dim parameters a layer, 2e-5 of a Qwen2.5-7B layer's.
void read_qwen2(const YamlFile& file, const YAML::Node& root, HfModel& out)
{
  out.model = read_dense_decoder(file, root);
  const GptConfig& m = out.model;
  out.notes.push_back(file.path + ": Qwen2's q/k/v biases (" +
                      std::to_string(checked_sum(m.hidden, checked_product({2, m.kv_dim()}, "num_key_value_heads"),
                                                 "hidden_size")) +
                      " parameters a layer) are not counted: gputwin's linear layers have biases all or none");
  if (boolean(file, root, "use_sliding_window", false))
    note_sliding_window(file, root, out);
}

// Qwen3ForCausalLM: attention_bias on q/k/v/o (the MLP has none), and an RMSNorm of each head's query and key.
void read_qwen3(const YamlFile& file, const YAML::Node& root, HfModel& out)
{
  out.model = read_dense_decoder(file, root);
  require_all_or_no_biases(file, root, "attention_bias", boolean(file, root, "attention_bias", false), false,
                           "the MLP's biases (Qwen3 has none)");
  out.notes.push_back(file.path + ": Qwen3's query/key norms (2 x head_dim = " +
                      std::to_string(checked_product({2, out.model.head_dim()}, "head_dim")) + " parameters a layer) are not modelled");
  if (boolean(file, root, "use_sliding_window", false))
    note_sliding_window(file, root, out);
}

// Mixture-of-experts architectures are recognised, not modelled: each refuses naming its expert-count field, and
// modelling one is writing its reader here.
[[noreturn]] void refuse_experts(const YamlFile& file, const YAML::Node& root, const char* experts)
{
  const bool named = present(root, experts);
  throw InputError(location(file, root[named ? experts : "architectures"]) + ": " + (named ? experts : "architectures") +
                   ": mixture-of-experts models are not modelled yet (expected a dense architecture: " +
                   supported_hf_architectures() + ")");
}
void read_mixtral(const YamlFile& file, const YAML::Node& root, HfModel&)
{
  refuse_experts(file, root, "num_local_experts");
}
void read_qwen2_moe(const YamlFile& file, const YAML::Node& root, HfModel&)
{
  refuse_experts(file, root, "num_experts");
}
void read_qwen3_moe(const YamlFile& file, const YAML::Node& root, HfModel&)
{
  refuse_experts(file, root, "num_experts");
}
void read_deepseek_v3(const YamlFile& file, const YAML::Node& root, HfModel&)
{
  refuse_experts(file, root, "n_routed_experts");
}
void read_gpt_oss(const YamlFile& file, const YAML::Node& root, HfModel&)
{
  refuse_experts(file, root, "num_local_experts");
}

struct Architecture {
  const char* name;
  void (*read)(const YamlFile&, const YAML::Node&, HfModel&);
  bool modelled;
};
constexpr Architecture architectures[] = {
    {"LlamaForCausalLM", read_llama, true},          {"MistralForCausalLM", read_mistral, true},
    {"Qwen2ForCausalLM", read_qwen2, true},          {"Qwen3ForCausalLM", read_qwen3, true},
    {"MixtralForCausalLM", read_mixtral, false},     {"Qwen2MoeForCausalLM", read_qwen2_moe, false},
    {"Qwen3MoeForCausalLM", read_qwen3_moe, false},  {"DeepseekV3ForCausalLM", read_deepseek_v3, false},
    {"GptOssForCausalLM", read_gpt_oss, false},
};

} // namespace

std::string supported_hf_architectures()
{
  std::string names;
  for (const Architecture& a : architectures)
    if (a.modelled)
      names += (names.empty() ? "" : ", ") + std::string(a.name);
  return names;
}

HfModel load_hf_config(const std::string& path)
{
  const YamlFile file = load_yaml_file(path);
  const YAML::Node& root = file.root;
  const YAML::Node list = root["architectures"];
  if (!present(root, "architectures"))
    throw InputError(location(file, root) + ": missing field 'architectures' (expected a list such as "
                                            "[\"LlamaForCausalLM\"]; supported: " +
                     supported_hf_architectures() + ")");
  if (!list.IsSequence() || list.size() == 0 || !list[0].IsScalar())
    throw InputError(location(file, list) + ": architectures: expected a list of architecture names, got a " +
                     (list.IsSequence() ? "list without a name" : node_kind(list)));
  const std::string name = list[0].Scalar();
  for (const Architecture& a : architectures) {
    if (name != a.name)
      continue;
    HfModel out;
    a.read(file, root, out);
    return out;
  }
  throw InputError(location(file, list[0]) + ": architectures: '" + name + "' is not supported (expected one of " +
                   supported_hf_architectures() + ")");
}

} // namespace gputwin::config
