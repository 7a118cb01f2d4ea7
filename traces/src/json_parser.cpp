#include "gputwin/traces/json_value.hpp"

namespace gputwin::traces {

namespace {

class Parser {
public:
  Parser(std::string_view text, int max_depth) : text_(text), max_depth_(max_depth) {}

  JsonValue parse_document()
  {
    skip_space();
    JsonValue value = parse_value(0);
    skip_space();
    if (pos_ != text_.size())
      fail("expected end of input after the top-level value, got " + describe_next());
    return value;
  }

private:
  [[noreturn]] void fail(const std::string& message) const { throw JsonParseError(line_, column_, message); }

  std::string describe_next() const
  {
    if (pos_ >= text_.size())
      return "end of input (truncated file?)";
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c < 0x20 || c >= 0x7f) {
      static constexpr char hex[] = "0123456789abcdef";
      return std::string("byte 0x") + hex[c >> 4] + hex[c & 0xf];
    }
    return std::string("'") + static_cast<char>(c) + "'";
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void advance()
  {
    if (text_[pos_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++pos_;
  }

  void skip_space()
  {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
      advance();
  }

  void expect(char c, const char* what)
  {
    if (at_end() || peek() != c)
      fail(std::string("expected ") + what + ", got " + describe_next());
    advance();
  }

  JsonValue parse_value(int depth)
  {
    JsonValue value;
    value.line = line_;
    value.column = column_;
    if (at_end())
      fail("expected a value, got " + describe_next());
    switch (peek()) {
    case '{': parse_object(value, depth); break;
    case '[': parse_array(value, depth); break;
    case '"':
      value.type = JsonValue::Type::String;
      value.text = parse_string();
      break;
    case 't': parse_literal("true", value, JsonValue::Type::Bool, true); break;
    case 'f': parse_literal("false", value, JsonValue::Type::Bool, false); break;
    case 'n': parse_literal("null", value, JsonValue::Type::Null, false); break;
    default:
      if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
        value.type = JsonValue::Type::Number;
        value.text = parse_number();
      } else {
        fail("expected a value, got " + describe_next());
      }
    }
    return value;
  }

  void parse_literal(std::string_view word, JsonValue& value, JsonValue::Type type, bool flag)
  {
    for (const char c : word) {
      if (at_end() || peek() != c)
        fail("expected '" + std::string(word) + "', got " + describe_next());
      advance();
    }
    value.type = type;
    value.boolean = flag;
  }

  void enter(int depth) const
  {
    if (depth >= max_depth_)
      fail("expected at most " + std::to_string(max_depth_) + " levels of nesting");
  }

  void parse_object(JsonValue& value, int depth)
  {
    enter(depth);
    value.type = JsonValue::Type::Object;
    advance(); // '{'
    skip_space();
    if (peek() == '}' && !at_end()) {
      advance();
      return;
    }
    for (;;) {
      skip_space();
      if (at_end() || peek() != '"')
        fail("expected a member name in quotes, got " + describe_next());
      const int key_line = line_, key_column = column_;
      std::string key = parse_string();
      if (value.find(key) != nullptr)
        throw JsonParseError(key_line, key_column, "duplicate member '" + key + "' (expected unique names)");
      skip_space();
      expect(':', "':' after a member name");
      skip_space();
      value.keys.push_back(std::move(key));
      value.items.push_back(parse_value(depth + 1));
      skip_space();
      if (!at_end() && peek() == ',') {
        advance();
        continue;
      }
      expect('}', "',' or '}' in an object");
      return;
    }
  }

  void parse_array(JsonValue& value, int depth)
  {
    enter(depth);
    value.type = JsonValue::Type::Array;
    advance(); // '['
    skip_space();
    if (!at_end() && peek() == ']') {
      advance();
      return;
    }
    for (;;) {
      skip_space();
      value.items.push_back(parse_value(depth + 1));
      skip_space();
      if (!at_end() && peek() == ',') {
        advance();
        continue;
      }
      expect(']', "',' or ']' in an array");
      return;
    }
  }

  std::string parse_number()
  {
    const size_t begin = pos_;
    if (peek() == '-')
      advance();
    if (at_end() || peek() < '0' || peek() > '9')
      fail("expected a digit in a number, got " + describe_next());
    if (peek() == '0') {
      advance();
    } else {
      while (!at_end() && peek() >= '0' && peek() <= '9')
        advance();
    }
    if (!at_end() && peek() == '.') {
      advance();
      if (at_end() || peek() < '0' || peek() > '9')
        fail("expected a digit after '.', got " + describe_next());
      while (!at_end() && peek() >= '0' && peek() <= '9')
        advance();
    }
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      advance();
      if (!at_end() && (peek() == '+' || peek() == '-'))
        advance();
      if (at_end() || peek() < '0' || peek() > '9')
        fail("expected a digit in an exponent, got " + describe_next());
      while (!at_end() && peek() >= '0' && peek() <= '9')
        advance();
    }
    return std::string(text_.substr(begin, pos_ - begin));
  }

  unsigned parse_hex4()
  {
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = peek();
      unsigned digit = 0;
      if (c >= '0' && c <= '9')
        digit = static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        digit = static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        digit = static_cast<unsigned>(c - 'A' + 10);
      else
        fail("expected 4 hex digits after \\u, got " + describe_next());
      code = code * 16 + digit;
      advance();
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned code)
  {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xc0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xe0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    }
  }

  std::string parse_string()
  {
    advance(); // opening quote
    std::string out;
    for (;;) {
      if (at_end())
        fail("expected a closing '\"', got end of input (truncated file?)");
      const char c = peek();
      if (c == '"') {
        advance();
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20)
        fail("expected a printable character or an escape in a string, got " + describe_next());
      if (c != '\\') {
        out += c;
        advance();
        continue;
      }
      advance();
      if (at_end())
        fail("expected an escape character after '\\', got end of input (truncated file?)");
      const char e = peek();
      advance();
      switch (e) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        unsigned code = parse_hex4();
        if (code >= 0xd800 && code < 0xdc00) {
          if (peek() != '\\')
            fail("expected a low surrogate \\uDC00-\\uDFFF after a high surrogate, got " + describe_next());
          advance();
          if (peek() != 'u')
            fail("expected a low surrogate \\uDC00-\\uDFFF after a high surrogate, got " + describe_next());
          advance();
          const unsigned low = parse_hex4();
          if (low < 0xdc00 || low >= 0xe000)
            fail("expected a low surrogate \\uDC00-\\uDFFF after a high surrogate");
          code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        } else if (code >= 0xdc00 && code < 0xe000) {
          fail("expected a high surrogate before a low surrogate \\u" + std::to_string(code));
        }
        append_utf8(out, code);
        break;
      }
      default: fail(std::string("expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u in an escape"));
      }
    }
  }

  std::string_view text_;
  int max_depth_;
  size_t pos_ = 0;
  int line_ = 1, column_ = 1;
};

} // namespace

JsonValue parse_json(std::string_view text, int max_depth)
{
  return Parser(text, max_depth).parse_document();
}

} // namespace gputwin::traces
