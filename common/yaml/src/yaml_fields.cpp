#include "gputwin/common/yaml_fields.hpp"

#include "gputwin/common/arg_parser.hpp"
#include "gputwin/common/input_error.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

namespace gputwin::config {

YamlFile load_yaml_file(const std::string& path)
{
  std::ifstream in(path);
  if (!in)
    throw InputError(path + ": cannot open the file (expected a readable YAML file)");
  std::stringstream text;
  text << in.rdbuf();
  return parse_yaml_text(text.str(), path);
}

std::string location(const YamlFile& file, const YAML::Node& node)
{
  const YAML::Mark mark = node.Mark();
  if (mark.is_null())
    return file.path;
  return file.path + ":" + std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

int64_t require_positive_integer(const YamlFile& file, const YAML::Node& map, const std::string& key)
{
  const YAML::Node node = map[key];
  if (!node)
    throw InputError(location(file, map) + ": missing field '" + key + "' (expected a positive integer)");
  if (!node.IsScalar())
    throw InputError(location(file, node) + ": " + key + ": expected a positive integer, got a " +
                     (node.IsMap()        ? "mapping"
                      : node.IsSequence() ? "list"
                                          : "null value"));
  int64_t value = 0;
  try {
    value = cli::parse_integer(key, node.Scalar());
  } catch (const InputError&) {
    throw InputError(location(file, node) + ": " + key + ": expected a positive integer, got '" + node.Scalar() + "'");
  }
  if (value <= 0)
    throw InputError(location(file, node) + ": " + key + ": expected a positive integer, got " + std::to_string(value));
  return value;
}

std::optional<std::string> optional_string(const YamlFile& file, const YAML::Node& map, const std::string& key)
{
  const YAML::Node node = map[key];
  if (!node)
    return std::nullopt;
  if (!node.IsScalar())
    throw InputError(location(file, node) + ": " + key + ": expected a string");
  return node.Scalar();
}

void reject_unknown_keys(const YamlFile& file, const YAML::Node& map, std::initializer_list<const char*> allowed)
{
  for (const auto& item : map) {
    const std::string key = item.first.Scalar();
    bool known = false;
    std::string expected;
    for (const char* a : allowed) {
      known = known || key == a;
      expected += (expected.empty() ? "" : ", ") + std::string(a);
    }
    if (!known)
      throw InputError(location(file, item.first) + ": " + key + ": unknown field (expected one of " + expected + ")");
  }
}

YamlFile parse_yaml_text(const std::string& text, const std::string& path)
{
  YamlFile file{path, {}};
  try {
    file.root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                     ": malformed YAML: " + e.msg);
  }
  if (!file.root.IsMap())
    throw InputError(path + ":1: expected a mapping of fields (key: value) at the top level");
  reject_duplicate_keys(file.root, path);
  return file;
}

namespace {

// Depth-first over the containers of a parsed document. An alias is the node it names (same position in
// the text), so each container is visited once: alias cycles and alias fan-out cost nothing.
void find_duplicate_keys(const YAML::Node& node, const std::string& where, std::set<std::pair<size_t, size_t>>& seen)
{
  if (!node.IsMap() && !node.IsSequence())
    return;
  const YAML::Mark mark = node.Mark();
  if (!mark.is_null() && !seen.emplace(static_cast<size_t>(mark.line), static_cast<size_t>(mark.column)).second)
    return;
  if (node.IsSequence()) {
    for (const YAML::Node& item : node)
      find_duplicate_keys(item, where, seen);
    return;
  }
  std::map<std::string, YAML::Mark> first;
  for (const auto& item : node) {
    if (item.first.IsScalar()) {
      const auto [it, inserted] = first.emplace(item.first.Scalar(), item.first.Mark());
      if (!inserted) {
        const YAML::Mark at = item.first.Mark();
        throw InputError(where +
                         (at.is_null() ? "" : ":" + std::to_string(at.line + 1) + ":" + std::to_string(at.column + 1)) +
                         ": " + item.first.Scalar() + ": duplicate key (expected each key once in a mapping" +
                         (it->second.is_null() ? "" : "; first at line " + std::to_string(it->second.line + 1)) + ")");
      }
    }
    find_duplicate_keys(item.second, where, seen);
  }
}

} // namespace

void reject_duplicate_keys(const YAML::Node& root, const std::string& where)
{
  std::set<std::pair<size_t, size_t>> seen;
  find_duplicate_keys(root, where, seen);
}

std::string node_kind(const YAML::Node& node)
{
  if (node.IsMap())
    return "mapping";
  if (node.IsSequence())
    return "list";
  if (node.IsScalar())
    return "scalar";
  return "null value";
}

std::optional<double> parse_finite_number(const std::string& text)
{
  double value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (begin != end && *begin == '+')
    ++begin;
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end || begin == end || !std::isfinite(value))
    return std::nullopt;
  return value;
}

std::optional<bool> parse_boolean(const std::string& text)
{
  if (text == "true")
    return true;
  if (text == "false")
    return false;
  return std::nullopt;
}

double require_number(const YamlFile& file, const YAML::Node& map, const std::string& key, double min, bool strict)
{
  const std::string expected = std::string("a number ") + (strict ? "> " : ">= ") + yaml_number(min);
  const YAML::Node node = map[key];
  if (!node)
    throw InputError(location(file, map) + ": missing field '" + key + "' (expected " + expected + ")");
  if (!node.IsScalar())
    throw InputError(location(file, node) + ": " + key + ": expected " + expected + ", got a " + node_kind(node));
  const std::optional<double> value = parse_finite_number(node.Scalar());
  if (!value || *value < min || (strict && *value == min))
    throw InputError(location(file, node) + ": " + key + ": expected " + expected + ", got '" + node.Scalar() + "'");
  return *value;
}

bool optional_boolean(const YamlFile& file, const YAML::Node& map, const std::string& key, bool fallback)
{
  const YAML::Node node = map[key];
  if (!node)
    return fallback;
  const std::optional<bool> value = node.IsScalar() ? parse_boolean(node.Scalar()) : std::nullopt;
  if (!value)
    throw InputError(location(file, node) + ": " + key + ": expected true or false, got " +
                     (node.IsScalar() ? "'" + node.Scalar() + "'" : "a " + node_kind(node)));
  return *value;
}

std::string yaml_number(double value)
{
  char buffer[40];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string yaml_quoted(const std::string& text)
{
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += escape;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

} // namespace gputwin::config
