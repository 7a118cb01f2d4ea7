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
} // namespace

GptConfig load_model_yaml(const std::string& path)
{
  const YamlFile file = load_yaml_file(path);
  const YAML::Node& root = file.root;
  reject_unknown_keys(file, root,
                     {"name", "hidden", "heads", "layers", "seq_len", "vocab", "num_query_groups", "ffn_hidden",
                      "activation", "norm", "position", "tie_embeddings", "bias", "dropout"});
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
  if (model.hidden % model.heads != 0)
    throw InputError(location(file, root["heads"]) + ": heads: " + std::to_string(model.heads) +
                     " does not divide hidden " + std::to_string(model.hidden) +
                     " (expected heads to divide the hidden size)");
  if (model.heads % model.kv_heads() != 0)
    throw InputError(location(file, root["num_query_groups"]) + ": num_query_groups: " +
                     std::to_string(model.kv_heads()) + " does not divide heads " + std::to_string(model.heads) +
                     " (expected a divisor of the head count)");
  return model;
}

} // namespace gputwin::config
