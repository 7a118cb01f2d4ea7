#pragma once
// A dependency-free streaming JSON writer with deterministic number formatting.
//
// Used for every machine-readable output of the project (CLI --json, and the op-graph trace files):
// integers are written exactly, doubles in the shortest form that reads back to the same bits, so the
// same values always give byte-identical text.

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace gputwin {

class JsonWriter {
public:
  // Writes to `out`; `indent_spaces` = 0 writes everything on one line.
  explicit JsonWriter(std::ostream& out, int indent_spaces = 2);

  void begin_object();
  void end_object();
  void begin_array();
  void end_array();

  // Names the next value inside an object.
  void key(std::string_view name);

  void value(std::string_view text);
  void value(const char* text) { value(std::string_view(text)); }
  void value(int64_t number);
  void value(int number) { value(static_cast<int64_t>(number)); }
  // Finite doubles only; NaN and infinities are written as null (JSON has no spelling for them).
  void value(double number);
  void value(bool flag);
  void null();

  // Writes `"name": value` in one call.
  template <typename T>
  void field(std::string_view name, const T& v)
  {
    key(name);
    value(v);
  }

  // True once the top-level value is complete.
  bool done() const { return stack_.empty() && wrote_top_level_; }

private:
  enum class Scope { Object, Array };
  void before_value();
  void newline_and_indent();

  std::ostream& out_;
  int indent_spaces_;
  std::vector<Scope> stack_;
  std::vector<bool> first_in_scope_;
  bool after_key_ = false;
  bool wrote_top_level_ = false;
};

// Escapes `text` as the inside of a JSON string (quotes, backslashes, control characters).
std::string json_escape(std::string_view text);

// The shortest decimal text that parses back to exactly `number` (std::to_chars); "null" if not finite.
std::string json_number(double number);

} // namespace gputwin
