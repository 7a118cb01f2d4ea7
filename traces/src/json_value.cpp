#include "gputwin/traces/json_value.hpp"

#include <charconv>
#include <cmath>

namespace gputwin::traces {

const JsonValue* JsonValue::find(std::string_view key) const
{
  if (type != Type::Object)
    return nullptr;
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == key)
      return &items[i];
  return nullptr;
}

std::optional<int64_t> JsonValue::as_int64() const
{
  if (type != Type::Number || text.find_first_of(".eE") != std::string::npos)
    return std::nullopt;
  int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size())
    return std::nullopt;
  return value;
}

std::optional<double> JsonValue::as_double() const
{
  if (type != Type::Number)
    return std::nullopt;
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(value))
    return std::nullopt;
  return value;
}

std::string type_name(JsonValue::Type type)
{
  switch (type) {
  case JsonValue::Type::Null: return "null";
  case JsonValue::Type::Bool: return "true/false";
  case JsonValue::Type::Number: return "number";
  case JsonValue::Type::String: return "string";
  case JsonValue::Type::Array: return "array";
  case JsonValue::Type::Object: return "object";
  }
  return "?";
}

JsonParseError::JsonParseError(int line, int column, const std::string& message)
    : std::runtime_error(std::to_string(line) + ":" + std::to_string(column) + ": " + message), line_(line),
      column_(column)
{
}

} // namespace gputwin::traces
