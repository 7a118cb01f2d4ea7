#include "yaml_overrides.hpp"

#include "gputwin/common/yaml_fields.hpp"
#include "gputwin/common/input_error.hpp"

#include <cstdint>
#include <vector>

namespace gputwin::topo {

namespace {

std::vector<std::string> split_path(const std::string& key)
{
  std::vector<std::string> segments;
  size_t begin = 0;
  while (true) {
    const size_t dot = key.find('.', begin);
    segments.push_back(key.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin));
    if (dot == std::string::npos)
      return segments;
    begin = dot + 1;
  }
}

std::string keys_of(const YAML::Node& map)
{
  std::string keys;
  for (const auto& item : map)
    keys += (keys.empty() ? "" : ", ") + item.first.Scalar();
  return keys;
}

// The index `segment` names in `list`, or -1.
int64_t list_index(const YAML::Node& list, const std::string& segment)
{
  if (segment.empty() || segment.size() > 9 || segment.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  const int64_t index = std::stoll(segment);
  return index < static_cast<int64_t>(list.size()) ? index : -1;
}

} // namespace

SetOverride parse_set_override(const std::string& text)
{
  const size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0)
    throw InputError("--set " + text + ": expected path.to.key=value (e.g. --set node.nvlink.gbytes_per_s=250)");
  return SetOverride{text.substr(0, equals), text.substr(equals + 1)};
}

void apply_set_override(YAML::Node& root, const SetOverride& override)
{
  YAML::Node value;
  try {
    value = YAML::Load(override.value);
  } catch (const YAML::Exception& e) {
    throw InputError("--set " + override.key + ": malformed value '" + override.value + "' (" + e.msg +
                     "; expected a YAML value: a number, a word, [a, list] or {a: mapping})");
  }
  config::reject_duplicate_keys(value, "--set " + override.key);
  const std::vector<std::string> segments = split_path(override.key);
  YAML::Node node = root;
  std::string walked;
  for (size_t i = 0; i < segments.size(); ++i) {
    const std::string& segment = segments[i];
    YAML::Node child;
    if (node.IsMap()) {
      bool found = false;
      for (const auto& item : node)
        found = found || item.first.Scalar() == segment;
      if (!found)
        throw InputError("--set " + override.key + ": unknown key (expected one of " + keys_of(node) + ")");
      child.reset(node[segment]);
    } else if (node.IsSequence()) {
      const int64_t index = list_index(node, segment);
      if (index < 0)
        throw InputError("--set " + override.key + ": unknown key (expected an index from 0 to " +
                         std::to_string(static_cast<int64_t>(node.size()) - 1) + " of the list " + walked + ")");
      child.reset(node[static_cast<size_t>(index)]);
    } else {
      throw InputError("--set " + override.key + ": unknown key (" + walked +
                       " is a value, not a mapping; expected a key of the cluster file)");
    }
    if (i + 1 == segments.size()) {
      child = value; // rebinds the field in the tree to the new value
      return;
    }
    walked += (walked.empty() ? "" : ".") + segment;
    node.reset(child);
  }
}

} // namespace gputwin::topo
