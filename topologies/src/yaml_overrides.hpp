#pragma once
// `--set path.to.key=value`: command-line edits of a cluster file's YAML tree, applied before it is read so the
// value goes through the same validation as the file's own.

#include <yaml-cpp/yaml.h>

#include <string>

namespace gputwin::topo {

struct SetOverride {
  std::string key;   // dotted path: "node.nvlink.gbytes_per_s"; list elements by index: "node.nics.gpus.3"
  std::string value; // YAML text: "250", "false", "[[0, 1], [2, 3]]"
};

// Splits "path.to.key=value" at the first '='. Throws InputError "--set TEXT: ..." when there is no '=' or no key.
SetOverride parse_set_override(const std::string& text);

// Replaces the value at `override.key` of `root` with `override.value` read as YAML. The key must already be in
// the file; otherwise throws InputError "--set KEY: unknown key (expected one of ...)" listing the keys there.
void apply_set_override(YAML::Node& root, const SetOverride& override);

} // namespace gputwin::topo
