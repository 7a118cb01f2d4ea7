#include "field_reader.hpp"

#include "gputwin/common/arg_parser.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/common/json_writer.hpp"

#include <limits>

namespace gputwin::topo {

namespace {

std::string parent_of(const std::string& path)
{
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

std::string last_key(const std::string& path)
{
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

std::string got(const YAML::Node& node)
{
  return node.IsScalar() ? "'" + node.Scalar() + "'" : "a " + config::node_kind(node);
}

} // namespace

FieldReader::FieldReader(config::YamlFile file, std::vector<std::string> set_keys)
    : file_(std::move(file)), set_keys_(std::move(set_keys))
{
}

YAML::Node FieldReader::find(const std::string& path) const
{
  YAML::Node node = file_.root;
  size_t begin = 0;
  while (begin < path.size()) {
    size_t dot = path.find('.', begin);
    if (dot == std::string::npos)
      dot = path.size();
    const std::string segment = path.substr(begin, dot - begin);
    const YAML::Node parent = node; // const: looking a key up must not add it
    const bool is_index =
        !segment.empty() && segment.size() < 10 && segment.find_first_not_of("0123456789") == std::string::npos;
    const YAML::Node child = parent.IsMap() ? parent[segment]
                             : parent.IsSequence() && is_index && std::stoul(segment) < parent.size()
                                 ? parent[std::stoul(segment)]
                                 : YAML::Node(YAML::NodeType::Undefined);
    if (!child.IsDefined())
      return YAML::Node(YAML::NodeType::Undefined);
    node.reset(child);
    begin = dot + 1;
  }
  return node;
}

bool FieldReader::has(const std::string& path) const
{
  return static_cast<bool>(find(path));
}

std::string FieldReader::where(const std::string& path, const YAML::Node& node) const
{
  for (const std::string& key : set_keys_) {
    if (path == key)
      return "--set " + key;
    if (path.compare(0, key.size() + 1, key + ".") == 0)
      return "--set " + key + ": " + path;
  }
  const std::string location = node.IsDefined() ? config::location(file_, node) : file_.path;
  std::string text = path.empty() ? location : location + ": " + path;
  for (const std::string& key : set_keys_) { // a --set inside this field may be the cause: say so
    if (!path.empty() && key.compare(0, path.size() + 1, path + ".") == 0) {
      text += " (with --set " + key + ")";
      break;
    }
  }
  return text;
}

std::string FieldReader::where(const std::string& path) const
{
  return where(path, find(path));
}

void FieldReader::fail(const std::string& path, const std::string& message) const
{
  throw InputError(where(path) + ": " + message);
}

YAML::Node FieldReader::scalar(const std::string& path, const std::string& expected) const
{
  const YAML::Node node = find(path);
  if (!node)
    throw InputError(where(parent_of(path)) + ": missing field '" + last_key(path) + "' (expected " + expected + ")");
  if (!node.IsScalar())
    fail(path, "expected " + expected + ", got " + got(node));
  return node;
}

void FieldReader::mapping(const std::string& path, std::initializer_list<const char*> keys) const
{
  const YAML::Node node = find(path);
  if (!node)
    throw InputError(where(parent_of(path)) + ": missing field '" + last_key(path) + "' (expected a mapping)");
  if (!node.IsMap())
    fail(path, "expected a mapping of fields (key: value), got " + got(node));
  std::string expected;
  for (const char* key : keys)
    expected += (expected.empty() ? "" : ", ") + std::string(key);
  for (const auto& item : node) {
    const std::string key = item.first.Scalar();
    bool known = false;
    for (const char* k : keys)
      known = known || key == k;
    const std::string field = path.empty() ? key : path + "." + key;
    if (!known)
      throw InputError(where(field, item.first) + ": unknown field (expected one of " + expected + ")");
  }
}

double FieldReader::positive_number(const std::string& path) const
{
  const YAML::Node node = scalar(path, "a positive number");
  const std::optional<double> value = config::parse_finite_number(node.Scalar());
  if (!value)
    fail(path, "expected a positive number, got '" + node.Scalar() + "'");
  if (*value <= 0)
    fail(path, "expected a positive number, got " + node.Scalar());
  return *value;
}

std::vector<double> FieldReader::positive_numbers(const std::string& path, size_t max_count) const
{
  const YAML::Node node = find(path);
  if (!node || node.IsScalar())
    return {positive_number(path)};
  const std::string expected =
      "a positive number or a list of 1 to " + std::to_string(max_count) + " positive numbers, e.g. [2, 1]";
  if (!node.IsSequence() || node.size() < 1 || node.size() > max_count)
    fail(path, "expected " + expected + ", got " +
                   (node.IsSequence() ? "a list of " + std::to_string(node.size()) : got(node)));
  std::vector<double> values;
  for (size_t i = 0; i < node.size(); ++i)
    values.push_back(positive_number(path + "." + std::to_string(i)));
  return values;
}

double FieldReader::non_negative_number(const std::string& path) const
{
  const YAML::Node node = scalar(path, "a number >= 0");
  const std::optional<double> value = config::parse_finite_number(node.Scalar());
  if (!value)
    fail(path, "expected a number >= 0, got '" + node.Scalar() + "'");
  if (*value < 0)
    fail(path, "expected a number >= 0, got " + node.Scalar());
  return *value;
}

int FieldReader::integer(const std::string& path, const YAML::Node& node, const std::string& expected) const
{
  int64_t value = 0;
  try {
    value = cli::parse_integer(path, node.Scalar());
  } catch (const InputError&) {
    fail(path, "expected " + expected + ", got '" + node.Scalar() + "'");
  }
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max())
    fail(path, "expected " + expected + " that fits in 32 bits, got " + node.Scalar());
  return static_cast<int>(value);
}

int FieldReader::positive_integer(const std::string& path) const
{
  const int value = integer(path, scalar(path, "a positive integer"), "a positive integer");
  if (value <= 0)
    fail(path, "expected a positive integer, got " + std::to_string(value));
  return value;
}

int FieldReader::non_negative_integer(const std::string& path) const
{
  const int value = integer(path, scalar(path, "an integer >= 0"), "an integer >= 0");
  if (value < 0)
    fail(path, "expected an integer >= 0, got " + std::to_string(value));
  return value;
}

bool FieldReader::boolean(const std::string& path) const
{
  const YAML::Node node = scalar(path, "true or false");
  const std::optional<bool> value = config::parse_boolean(node.Scalar());
  if (!value)
    fail(path, "expected true or false, got '" + node.Scalar() + "'");
  return *value;
}

std::string FieldReader::text(const std::string& path) const
{
  const YAML::Node node = scalar(path, "a name");
  if (node.Scalar().empty())
    fail(path, "expected a name, got an empty string");
  return node.Scalar();
}

std::vector<std::vector<int>> FieldReader::integer_lists(const std::string& path) const
{
  const std::string expected = "a list of lists of integers, e.g. [[0, 1], [2, 3]]";
  const YAML::Node node = find(path);
  if (!node)
    throw InputError(where(parent_of(path)) + ": missing field '" + last_key(path) + "' (expected " + expected + ")");
  if (!node.IsSequence())
    fail(path, "expected " + expected + ", got " + got(node));
  std::vector<std::vector<int>> lists;
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string list_path = path + "." + std::to_string(i);
    const YAML::Node list = node[i];
    if (!list.IsSequence())
      fail(list_path, "expected a list of integers, got " + got(list));
    std::vector<int>& values = lists.emplace_back();
    for (size_t j = 0; j < list.size(); ++j) {
      const std::string value_path = list_path + "." + std::to_string(j);
      if (!list[j].IsScalar())
        fail(value_path, "expected an integer, got " + got(list[j]));
      values.push_back(integer(value_path, list[j], "an integer"));
    }
  }
  return lists;
}

} // namespace gputwin::topo
