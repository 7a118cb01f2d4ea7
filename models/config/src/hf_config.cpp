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
  // head_dim (Qwen3, gpt-oss, Llama 4): the width of one head when it is not hidden_size / num_attention_heads
  // (Qwen3-235B-A22B: 64 heads of 128 over hidden 4096, queries 8192 wide). Kept as 0 when it is the default.
  if (const std::optional<int64_t> head_dim = optional_integer(file, root, "head_dim");
      head_dim && (m.hidden % m.heads != 0 || *head_dim != m.hidden / m.heads))
    m.head_size = *head_dim;
  if (m.head_size == 0 && m.hidden % m.heads != 0)
    cannot_express(file, root, "num_attention_heads",
                   std::to_string(m.heads) + " does not divide hidden_size " + std::to_string(m.hidden) +
                       " (expected heads of hidden_size / num_attention_heads, or a head_dim field)");
  if (m.head_dim() % 2 != 0) // validate_model's rule, named by the file's field
    cannot_express(file, root, m.head_size > 0 ? "head_dim" : "num_attention_heads",
                   "the head size " + std::string(m.head_size > 0 ? "" : "hidden_size / num_attention_heads = ") +
                       std::to_string(m.head_dim()) + " is odd (expected even: RoPE rotates pairs of channels)");
  if (m.heads % m.query_groups != 0)
    cannot_express(file, root, "num_key_value_heads",
                   std::to_string(m.query_groups) + " does not divide num_attention_heads " + std::to_string(m.heads) +
                       " (expected a divisor of the head count)");
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
                      std::to_string(checked_sum(m.attention_width(), checked_product({2, m.kv_dim()}, "num_key_value_heads"),
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

// A count that may be 0 (n_shared_experts, first_k_dense_replace), or `fallback` when absent.
int64_t count(const YamlFile& file, const YAML::Node& root, const char* key, int64_t fallback)
{
  if (!present(root, key))
    return fallback;
  reject_string(file, root, key, "a non-negative integer");
  const double v = require_number(file, root, key, 0, false);
  if (v != static_cast<double>(static_cast<int64_t>(v)))
    throw InputError(location(file, root[key]) + ": " + key + ": expected a non-negative integer, got " +
                     root[key].Scalar());
  return static_cast<int64_t>(v);
}

// The routed experts: `experts_key` experts, top num_experts_per_tok (at most the experts, naming the field).
void read_routed_experts(const YamlFile& file, const YAML::Node& root, const char* experts_key, MoeConfig& m)
{
  m.experts = integer(file, root, experts_key);
  m.topk = integer(file, root, "num_experts_per_tok");
  if (m.topk > m.experts)
    cannot_express(file, root, "num_experts_per_tok",
                   std::to_string(m.topk) + " exceeds " + experts_key + " " + std::to_string(m.experts) +
                       " (expected at most the expert count)");
}

// MixtralForCausalLM: Mistral's layer with num_local_experts experts of intermediate_size, top num_experts_per_tok.
void read_mixtral(const YamlFile& file, const YAML::Node& root, HfModel& out)
{
  out.model = read_dense_decoder(file, root);
  note_sliding_window(file, root, out);
  MoeConfig& m = out.model.moe;
  read_routed_experts(file, root, "num_local_experts", m);
  m.expert_ffn_hidden = out.model.ffn_hidden;
}

// Qwen3MoeForCausalLM / Qwen2MoeForCausalLM: num_experts of moe_intermediate_size, top num_experts_per_tok, every
// decoder_sparse_step-th layer MoE; Qwen2-MoE adds a shared expert of shared_expert_intermediate_size (its sigmoid
// gate, h parameters a layer, is not counted).
void read_qwen_moe(const YamlFile& file, const YAML::Node& root, HfModel& out, bool qwen3)
{
  if (qwen3)
    read_qwen3(file, root, out);
  else
    read_qwen2(file, root, out);
  MoeConfig& m = out.model.moe;
  read_routed_experts(file, root, "num_experts", m);
  m.expert_ffn_hidden = integer(file, root, "moe_intermediate_size");
  m.layer_period = count(file, root, "decoder_sparse_step", 1);
  if (m.layer_period < 1)
    cannot_express(file, root, "decoder_sparse_step", "expected a positive integer");
  if (present(root, "mlp_only_layers") && root["mlp_only_layers"].IsSequence() && root["mlp_only_layers"].size() > 0)
    cannot_express(file, root, "mlp_only_layers", "dense layers at chosen indices are not modelled (expected [])");
  if (!qwen3 && count(file, root, "shared_expert_intermediate_size", 0) > 0) {
    m.shared_experts = 1;
    m.shared_ffn_hidden = count(file, root, "shared_expert_intermediate_size", 0);
  }
}
void read_qwen2_moe(const YamlFile& file, const YAML::Node& root, HfModel& out)
{
  read_qwen_moe(file, root, out, false);
}
void read_qwen3_moe(const YamlFile& file, const YAML::Node& root, HfModel& out)
{
  read_qwen_moe(file, root, out, true);
}

// DeepseekV2ForCausalLM / DeepseekV3ForCausalLM: MLA attention (q_lora_rank may be null: a direct q projection),
// n_routed_experts of moe_intermediate_size top num_experts_per_tok, n_shared_experts, the first
// first_k_dense_replace layers dense (intermediate_size), then every moe_layer_freq-th; n_group / topk_group
// routing, scoring_func softmax|sigmoid (V3: aux-loss-free), num_nextn_predict_layers MTP modules (V3).
void read_deepseek(const YamlFile& file, const YAML::Node& root, HfModel& out)
{
  GptConfig& g = out.model;
  g.name = file_stem(file.path);
  g.hidden = integer(file, root, "hidden_size");
  g.heads = integer(file, root, "num_attention_heads");
  g.layers = integer(file, root, "num_hidden_layers");
  g.ffn_hidden = integer(file, root, "intermediate_size");
  g.vocab = integer(file, root, "vocab_size");
  g.seq_len = integer(file, root, "max_position_embeddings");
  g.activation = Activation::SwiGlu;
  g.norm = Norm::RmsNorm;
  g.position = PositionEmbedding::Rope;
  g.tie_embeddings = boolean(file, root, "tie_word_embeddings", false);
  g.bias = boolean(file, root, "attention_bias", false);
  g.dropout = false;
  g.mla = MlaConfig{count(file, root, "q_lora_rank", 0), integer(file, root, "kv_lora_rank"),
                    integer(file, root, "qk_nope_head_dim"), integer(file, root, "qk_rope_head_dim"),
                    integer(file, root, "v_head_dim")};
  MoeConfig& m = g.moe;
  read_routed_experts(file, root, "n_routed_experts", m);
  m.expert_ffn_hidden = integer(file, root, "moe_intermediate_size");
  m.shared_experts = count(file, root, "n_shared_experts", 0);
  m.dense_first_layers = count(file, root, "first_k_dense_replace", 0);
  m.layer_period = count(file, root, "moe_layer_freq", 1);
  m.router_groups = count(file, root, "n_group", 0);
  m.router_group_topk = count(file, root, "topk_group", 0);
  if (m.router_groups == 1) // one group: no group limit
    m.router_groups = m.router_group_topk = 0;
  const std::string scoring = text(file, root, "scoring_func").value_or("softmax");
  if (scoring != "softmax" && scoring != "sigmoid")
    cannot_express(file, root, "scoring_func", "expected softmax or sigmoid, got '" + scoring + "'");
  m.router = scoring == "sigmoid" ? RouterScore::Sigmoid : RouterScore::Softmax;
  m.aux_loss = m.router == RouterScore::Softmax;
  m.mtp_layers = count(file, root, "num_nextn_predict_layers", 0);
  if (m.layer_period < 1 || m.dense_first_layers >= g.layers)
    cannot_express(file, root, m.layer_period < 1 ? "moe_layer_freq" : "first_k_dense_replace",
                   "expected moe_layer_freq >= 1 and first_k_dense_replace below num_hidden_layers");
  if (m.router_groups > 0 && (m.experts % m.router_groups != 0 || m.router_group_topk < 1 ||
                              m.router_group_topk > m.router_groups))
    cannot_express(file, root, "n_group", "expected n_group dividing n_routed_experts and 1 <= topk_group <= n_group");
  if (g.mla.qk_rope_head_dim % 2 != 0)
    cannot_express(file, root, "qk_rope_head_dim", "expected an even size (RoPE rotates pairs of channels)");
}

// The number of layers `layer_types` (transformers' per-layer attention kinds) marks sliding_attention; absent,
// every other layer from the first (GptOssConfig's default: sliding, full, sliding, ...).
int64_t sliding_layers(const YamlFile& file, const YAML::Node& root, int64_t layers)
{
  if (!present(root, "layer_types"))
    return (layers + 1) / 2;
  const YAML::Node types = root["layer_types"];
  if (!types.IsSequence() || static_cast<int64_t>(types.size()) != layers)
    cannot_express(file, root, "layer_types", "expected a list of num_hidden_layers = " + std::to_string(layers) +
                                                  " attention kinds");
  int64_t n = 0;
  for (const YAML::Node& t : types) {
    if (!t.IsScalar() || (t.Scalar() != "sliding_attention" && t.Scalar() != "full_attention"))
      throw InputError(location(file, t) + ": layer_types: expected sliding_attention or full_attention, got " +
                       (t.IsScalar() ? "'" + t.Scalar() + "'" : "a " + node_kind(t)));
    n += t.Scalar() == "sliding_attention" ? 1 : 0;
  }
  return n;
}

// GptOssForCausalLM: grouped-query attention with biases on q/k/v/o (attention_bias) and head_dim 64 over hidden
// 2880, num_local_experts experts of intermediate_size (with biases: gputwin's all-or-none switch counts them) top
// num_experts_per_tok, no dense MLP. Read, with notes for what gputwin approximates, as the catalog's gpt-oss-120b
// does: the sliding-window layers (layer_types) timed as full causal attention, the attention sinks (one logit a
// head) and the router's bias not counted, the clamped SwiGLU (swiglu_limit) as SwiGLU.
void read_gpt_oss(const YamlFile& file, const YAML::Node& root, HfModel& out)
{
  out.model = read_dense_decoder(file, root);
  GptConfig& g = out.model;
  g.bias = boolean(file, root, "attention_bias", true);
  MoeConfig& m = g.moe;
  read_routed_experts(file, root, "num_local_experts", m);
  m.expert_ffn_hidden = g.ffn_hidden;
  if (const std::optional<int64_t> window = optional_integer(file, root, "sliding_window")) {
    const int64_t sliding = sliding_layers(file, root, g.layers);
    if (sliding > 0 && *window < g.seq_len)
      out.notes.push_back(file.path + ": sliding_window " + std::to_string(*window) + " on " + std::to_string(sliding) +
                          " of " + std::to_string(g.layers) + " layers (layer_types): modelled as full causal attention "
                          "over the sequence (their attention time overestimated beyond " + std::to_string(*window) +
                          " tokens)");
  }
  out.notes.push_back(file.path + ": GPT-OSS's attention sinks (num_attention_heads = " + std::to_string(g.heads) +
                      " parameters a layer) and router biases (num_local_experts = " + std::to_string(m.experts) +
                      " a layer) are not counted; its clamped SwiGLU (swiglu_limit) is modelled as SwiGLU");
}

struct Architecture {
  const char* name;
  void (*read)(const YamlFile&, const YAML::Node&, HfModel&);
};
constexpr Architecture architectures[] = {
    {"LlamaForCausalLM", read_llama},           {"MistralForCausalLM", read_mistral},
    {"Qwen2ForCausalLM", read_qwen2},           {"Qwen3ForCausalLM", read_qwen3},
    {"MixtralForCausalLM", read_mixtral},       {"Qwen2MoeForCausalLM", read_qwen2_moe},
    {"Qwen3MoeForCausalLM", read_qwen3_moe},    {"DeepseekV2ForCausalLM", read_deepseek},
    {"DeepseekV3ForCausalLM", read_deepseek},   {"GptOssForCausalLM", read_gpt_oss},
};

} // namespace

std::string supported_hf_architectures()
{
  std::string names;
  for (const Architecture& a : architectures)
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
