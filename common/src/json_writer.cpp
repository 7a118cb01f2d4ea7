#include "gputwin/common/json_writer.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>

namespace gputwin {

JsonWriter::JsonWriter(std::ostream& out, int indent_spaces) : out_(out), indent_spaces_(indent_spaces) {}

void JsonWriter::newline_and_indent()
{
  if (indent_spaces_ == 0)
    return;
  out_ << '\n';
  for (size_t i = 0; i < stack_.size() * static_cast<size_t>(indent_spaces_); ++i)
    out_ << ' ';
}

void JsonWriter::before_value()
{
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (stack_.empty()) {
    if (wrote_top_level_)
      throw std::logic_error("JsonWriter: a second top-level value");
    wrote_top_level_ = true;
    return;
  }
  if (stack_.back() == Scope::Object)
    throw std::logic_error("JsonWriter: a value inside an object needs key() first");
  if (!first_in_scope_.back())
    out_ << ',';
  first_in_scope_.back() = false;
  newline_and_indent();
}

void JsonWriter::key(std::string_view name)
{
  if (stack_.empty() || stack_.back() != Scope::Object || after_key_)
    throw std::logic_error("JsonWriter: key() outside an object");
  if (!first_in_scope_.back())
    out_ << ',';
  first_in_scope_.back() = false;
  newline_and_indent();
  out_ << '"' << json_escape(name) << '"' << (indent_spaces_ ? ": " : ":");
  after_key_ = true;
}

void JsonWriter::begin_object()
{
  before_value();
  out_ << '{';
  stack_.push_back(Scope::Object);
  first_in_scope_.push_back(true);
}

void JsonWriter::end_object()
{
  if (stack_.empty() || stack_.back() != Scope::Object || after_key_)
    throw std::logic_error("JsonWriter: end_object() without a matching begin_object()");
  const bool empty = first_in_scope_.back();
  stack_.pop_back();
  first_in_scope_.pop_back();
  if (!empty)
    newline_and_indent();
  out_ << '}';
  if (stack_.empty() && indent_spaces_)
    out_ << '\n';
}

void JsonWriter::begin_array()
{
  before_value();
  out_ << '[';
  stack_.push_back(Scope::Array);
  first_in_scope_.push_back(true);
}

void JsonWriter::end_array()
{
  if (stack_.empty() || stack_.back() != Scope::Array)
    throw std::logic_error("JsonWriter: end_array() without a matching begin_array()");
  const bool empty = first_in_scope_.back();
  stack_.pop_back();
  first_in_scope_.pop_back();
  if (!empty)
    newline_and_indent();
  out_ << ']';
  if (stack_.empty() && indent_spaces_)
    out_ << '\n';
}

void JsonWriter::value(std::string_view text)
{
  before_value();
  out_ << '"' << json_escape(text) << '"';
}

void JsonWriter::value(int64_t number)
{
  before_value();
  out_ << number;
}

void JsonWriter::value(double number)
{
  before_value();
  out_ << json_number(number);
}

void JsonWriter::value(bool flag)
{
  before_value();
  out_ << (flag ? "true" : "false");
}

void JsonWriter::null()
{
  before_value();
  out_ << "null";
}

std::string json_escape(std::string_view text)
{
  static constexpr char hex[] = "0123456789abcdef";
  std::string escaped;
  escaped.reserve(text.size());
  for (const char c : text) {
    switch (c) {
    case '"': escaped += "\\\""; break;
    case '\\': escaped += "\\\\"; break;
    case '\n': escaped += "\\n"; break;
    case '\r': escaped += "\\r"; break;
    case '\t': escaped += "\\t"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        escaped += "\\u00";
        escaped += hex[(c >> 4) & 0xf];
        escaped += hex[c & 0xf];
      } else {
        escaped += c;
      }
    }
  }
  return escaped;
}

std::string json_number(double number)
{
  if (!std::isfinite(number))
    return "null";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), number);
  return std::string(buffer, result.ptr);
}

} // namespace gputwin
