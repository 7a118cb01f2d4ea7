#pragma once
// A small, dependency-free JSON parser for the trace reader (the engine and its traces must build on a
// machine with nothing but a compiler and CUDA). Strict RFC 8259 grammar; robust against truncated or
// corrupt input: every failure is a JsonParseError with line and column, nesting depth is bounded (no stack
// exhaustion), and every loop consumes input (no hang).

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gputwin::traces {

struct JsonValue {
  enum class Type { Null, Bool, Number, String, Array, Object };
  Type type = Type::Null;
  bool boolean = false;
  std::string text;              // String: the decoded UTF-8 text; Number: the literal as written
  std::vector<JsonValue> items;  // Array elements; Object member values (parallel to `keys`)
  std::vector<std::string> keys; // Object member names, in document order (unique)
  int line = 0, column = 0;      // where the value starts, 1-based

  // The member named `key` of an object, or nullptr.
  const JsonValue* find(std::string_view key) const;
  // The number as an exact 64-bit integer; nullopt if it is not an integer literal that fits.
  std::optional<int64_t> as_int64() const;
  // The number as a double; nullopt if it is not a number or does not fit a finite double.
  std::optional<double> as_double() const;
};

// "object", "array", "string", "number", "true/false", "null": for error messages.
std::string type_name(JsonValue::Type type);

class JsonParseError : public std::runtime_error {
public:
  JsonParseError(int line, int column, const std::string& message);
  int line() const { return line_; }
  int column() const { return column_; }

private:
  int line_, column_;
};

// Parses the whole of `text` as one JSON value. Objects deeper than `max_depth` levels are rejected.
// Throws JsonParseError "LINE:COLUMN: expected ..., got ..." on any syntax error, duplicate key or
// trailing content.
JsonValue parse_json(std::string_view text, int max_depth = 64);

} // namespace gputwin::traces
