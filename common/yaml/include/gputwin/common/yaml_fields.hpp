#pragma once
// Typed, validated access to the fields of a YAML configuration file. Every error is an InputError of one
// line: "FILE:LINE:COLUMN: FIELD: expected ..., got ...".

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace gputwin::config {

struct YamlFile {
  std::string path;
  YAML::Node root;
};

// Parses `path`; throws InputError if it cannot be read, is not valid YAML, its top level is not a mapping, or a
// mapping holds a key twice (reject_duplicate_keys).
YamlFile load_yaml_file(const std::string& path);

// "FILE:LINE:COLUMN" of `node` (1-based), or "FILE" when the node has no position.
std::string location(const YamlFile& file, const YAML::Node& node);

// The field `key` of mapping `map` as an integer > 0. Throws if missing or not a positive integer.
int64_t require_positive_integer(const YamlFile& file, const YAML::Node& map, const std::string& key);

// The field `key` as a string scalar, or nullopt when absent. Throws if present but not a scalar.
std::optional<std::string> optional_string(const YamlFile& file, const YAML::Node& map, const std::string& key);

// Throws naming the first key of `map` that is not in `allowed` (catches typos such as `hiden:`).
void reject_unknown_keys(const YamlFile& file, const YAML::Node& map, std::initializer_list<const char*> allowed);

// Parses `text` as the contents of a file called `path` (e.g. a file embedded into the binary at build time);
// errors as load_yaml_file, naming `path`.
YamlFile parse_yaml_text(const std::string& text, const std::string& path);

// Throws InputError "WHERE:LINE:COLUMN: KEY: duplicate key (first at line N) ..." for the first key that a
// mapping of `root` (at any depth) holds twice. yaml-cpp keeps both and looks up the first, so a repeated key
// would otherwise be silently ignored. load_yaml_file and parse_yaml_text call it on every document.
void reject_duplicate_keys(const YAML::Node& root, const std::string& where);

// What `node` is, for error messages: "mapping", "list", "null value" or "scalar".
std::string node_kind(const YAML::Node& node);

// The whole of `text` as a finite decimal number ("31.5", "2e9"), or nullopt.
std::optional<double> parse_finite_number(const std::string& text);

// `text` as a YAML 1.2 boolean ("true" or "false"), or nullopt.
std::optional<bool> parse_boolean(const std::string& text);

// The field `key` of `map` as a finite number >= `min` (> `min` when `strict`). Throws if missing or not.
double require_number(const YamlFile& file, const YAML::Node& map, const std::string& key, double min, bool strict);

// The field `key` of `map` as a boolean, or `fallback` when absent. Throws if present but not true/false.
bool optional_boolean(const YamlFile& file, const YAML::Node& map, const std::string& key, bool fallback);

// For writers: the shortest text that reads back to the same double, and a YAML double-quoted scalar.
std::string yaml_number(double value);
std::string yaml_quoted(const std::string& text);

} // namespace gputwin::config
