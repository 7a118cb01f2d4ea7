#include "gputwin/config/model_yaml.hpp"

#include "gputwin/common/yaml_fields.hpp"
#include "gputwin/common/input_error.hpp"

namespace gputwin::config {

namespace {
std::string file_stem(const std::string& path)
{
  const size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = name.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}
// A non-negative integer field (0 allowed: "none"), or `fallback` when absent.
int64_t optional_count(const YamlFile& file, const YAML::Node& root, const char* key, int64_t fallback)
{
  const YAML::Node node = root[key];
  if (!node)
    return fallback;
  const std::optional<double> value = node.IsScalar() ? parse_finite_number(node.Scalar()) : std::nullopt;
  if (!value || *value < 0 || *value != static_cast<double>(static_cast<int64_t>(*value)))
    throw InputError(location(file, node) + ": " + key + ": expected a non-negative integer, got " +
                     (node.IsScalar() ? "'" + node.Scalar() + "'" : node_kind(node)));
  return static_cast<int64_t>(*value);
}

// The mixture-of-experts and MLA fields (Megatron-LM / HuggingFace names), each checked against the others where
// a wrong value would otherwise surface later without the file's line.
void read_moe_fields(const YamlFile& file, const YAML::Node& root, GptConfig& model)
{
  MoeConfig& m = model.moe;
  auto fail = [&](const char* key, const std::string& what) {
    throw InputError(location(file, root[key] ? root[key] : root) + ": " + key + ": " + what);
  };
  m.experts = optional_count(file, root, "num_experts", 0);
  m.topk = optional_count(file, root, "moe_router_topk", 0);
  m.expert_ffn_hidden = optional_count(file, root, "moe_ffn_hidden", 0);
  m.shared_experts = optional_count(file, root, "moe_shared_experts", 0);
  m.shared_ffn_hidden = optional_count(file, root, "moe_shared_ffn_hidden", 0);
  m.dense_first_layers = optional_count(file, root, "moe_dense_first_layers", 0);
  m.layer_period = optional_count(file, root, "moe_layer_period", 1);
  m.router_groups = optional_count(file, root, "moe_router_groups", 0);
  m.router_group_topk = optional_count(file, root, "moe_router_group_topk", 0);
  m.mtp_layers = optional_count(file, root, "mtp_layers", 0);
  m.aux_loss = optional_boolean(file, root, "moe_aux_loss", true);
  if (const std::optional<std::string> router = optional_string(file, root, "moe_router")) {
    if (*router != "softmax" && *router != "sigmoid")
      fail("moe_router", "expected softmax|sigmoid, got '" + *router + "'");
    m.router = *router == "sigmoid" ? RouterScore::Sigmoid : RouterScore::Softmax;
  }
  if (m.experts > 0) {
    if (m.topk < 1 || m.topk > m.experts)
      fail("moe_router_topk", "expected 1 to num_experts (" + std::to_string(m.experts) + "), got " +
                                  std::to_string(m.topk));
    if (m.expert_ffn_hidden == 0)
      m.expert_ffn_hidden = model.ffn();
    if (m.layer_period < 1)
      fail("moe_layer_period", "expected a positive integer, got 0");
    if (m.dense_first_layers >= model.layers)
      fail("moe_dense_first_layers", "expected fewer than layers (" + std::to_string(model.layers) + "), got " +
                                         std::to_string(m.dense_first_layers));
    if (m.router_groups > 0 && (m.experts % m.router_groups != 0 || m.router_group_topk < 1 ||
                                m.router_group_topk > m.router_groups))
      fail("moe_router_groups", "expected groups dividing num_experts with 1 <= moe_router_group_topk <= groups");
  } else {
    for (const char* key : {"moe_router_topk", "moe_ffn_hidden", "moe_shared_experts", "moe_shared_ffn_hidden",
                            "moe_dense_first_layers", "moe_router_groups", "mtp_layers"})
      if (root[key])
        fail(key, "needs num_experts (expected a mixture-of-experts model)");
  }
  MlaConfig& a = model.mla;
  a.q_lora_rank = optional_count(file, root, "q_lora_rank", 0);
  a.kv_lora_rank = optional_count(file, root, "kv_lora_rank", 0);
  a.qk_nope_head_dim = optional_count(file, root, "qk_nope_head_dim", 0);
  a.qk_rope_head_dim = optional_count(file, root, "qk_rope_head_dim", 0);
  a.v_head_dim = optional_count(file, root, "v_head_dim", 0);
  const bool any = a.q_lora_rank || a.qk_nope_head_dim || a.qk_rope_head_dim || a.v_head_dim;
  if (any && !a.enabled())
    fail("kv_lora_rank", "multi-head latent attention needs kv_lora_rank > 0 with its head dims");
  for (const char* key : {"qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"})
    if (a.enabled() && optional_count(file, root, key, 0) == 0)
      fail(key, "expected a positive integer with kv_lora_rank");
  if (a.enabled() && a.qk_rope_head_dim % 2 != 0)
    fail("qk_rope_head_dim", "expected an even size (RoPE rotates pairs), got " + std::to_string(a.qk_rope_head_dim));
}

} // namespace

GptConfig load_model_yaml(const std::string& path)
{
  const YamlFile file = load_yaml_file(path);
  const YAML::Node& root = file.root;
  reject_unknown_keys(file, root,
                     {"name", "hidden", "heads", "layers", "seq_len", "vocab", "num_query_groups", "ffn_hidden", "head_size",
                      "activation", "norm", "position", "tie_embeddings", "bias", "dropout", "num_experts",
                      "moe_router_topk", "moe_ffn_hidden", "moe_shared_experts", "moe_shared_ffn_hidden",
                      "moe_dense_first_layers", "moe_layer_period", "moe_router", "moe_router_groups",
                      "moe_router_group_topk", "moe_aux_loss", "mtp_layers", "q_lora_rank", "kv_lora_rank",
                      "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
  GptConfig model;
  model.name = optional_string(file, root, "name").value_or(file_stem(path));
  model.hidden = require_positive_integer(file, root, "hidden");
  model.heads = require_positive_integer(file, root, "heads");
  model.layers = require_positive_integer(file, root, "layers");
  model.seq_len = require_positive_integer(file, root, "seq_len");
  model.vocab = require_positive_integer(file, root, "vocab");
  if (root["num_query_groups"])
    model.query_groups = require_positive_integer(file, root, "num_query_groups");
  if (root["ffn_hidden"])
    model.ffn_hidden = require_positive_integer(file, root, "ffn_hidden");
  if (root["head_size"]) // the width of one head when it is not hidden / heads (Qwen3: 128 with hidden 4096, 64 heads)
    model.head_size = require_positive_integer(file, root, "head_size");
  auto choice = [&](const char* key, auto parse, auto& field, const char* expected) {
    if (const std::optional<std::string> text = optional_string(file, root, key)) {
      const auto parsed = parse(*text);
      if (!parsed)
        throw InputError(location(file, root[key]) + ": " + key + ": expected " + expected + ", got '" + *text + "'");
      field = *parsed;
    }
  };
  choice("activation", parse_activation, model.activation, "gelu|swiglu|squared-relu");
  choice("norm", parse_norm, model.norm, "layernorm|rmsnorm");
  choice("position", parse_position, model.position, "learned|rope");
  model.tie_embeddings = optional_boolean(file, root, "tie_embeddings", true);
  model.bias = optional_boolean(file, root, "bias", true);
  model.dropout = optional_boolean(file, root, "dropout", true);
  read_moe_fields(file, root, model);
  if (model.head_size == 0 && model.hidden % model.heads != 0)
    throw InputError(location(file, root["heads"]) + ": heads: " + std::to_string(model.heads) +
                     " does not divide hidden " + std::to_string(model.hidden) +
                     " (expected heads to divide the hidden size, or a head_size field)");
  if (model.position == PositionEmbedding::Rope && model.head_size % 2 != 0)
    throw InputError(location(file, root["head_size"]) + ": head_size: " + std::to_string(model.head_size) +
                     " is odd (expected even: rope rotates pairs of channels)");
  if (model.heads % model.kv_heads() != 0)
    throw InputError(location(file, root["num_query_groups"]) + ": num_query_groups: " +
                     std::to_string(model.kv_heads()) + " does not divide heads " + std::to_string(model.heads) +
                     " (expected a divisor of the head count)");
  return model;
}

} // namespace gputwin::config
