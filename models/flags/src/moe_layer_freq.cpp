#include "gputwin/models/moe_layer_freq.hpp"

#include <cctype>
#include <stdexcept>

namespace gputwin {

namespace {

// A recursive-descent reader of the list expressions moe_freq_type evaluates:
//   expr := term ('+' term)*      term := factor ('*' integer)*      factor := '[' integer (',' integer)* ']' | '(' expr ')'
class PatternReader {
public:
  explicit PatternReader(const std::string& text) : text_(text) {}

  std::vector<int> read()
  {
    std::vector<int> out = expr();
    skip_spaces();
    if (at_ < text_.size())
      fail("unexpected '" + std::string(1, text_[at_]) + "'");
    return out;
  }

private:
  std::vector<int> expr()
  {
    std::vector<int> out = term();
    while (take('+')) {
      const std::vector<int> more = term();
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }

  std::vector<int> term()
  {
    std::vector<int> out = factor();
    while (take('*')) {
      const int64_t times = integer();
      if (times > 100000 || static_cast<int64_t>(out.size()) * times > 100000)
        fail("the pattern is longer than any model's layers");
      std::vector<int> repeated;
      for (int64_t i = 0; i < times; ++i)
        repeated.insert(repeated.end(), out.begin(), out.end());
      out = std::move(repeated);
    }
    return out;
  }

  std::vector<int> factor()
  {
    if (take('(')) {
      std::vector<int> out = expr();
      if (!take(')'))
        fail("expected ')'");
      return out;
    }
    if (!take('['))
      fail("expected '[' or '('");
    std::vector<int> out;
    do {
      const int64_t v = integer();
      if (v != 0 && v != 1)
        fail("expected 0 (dense) or 1 (experts), got " + std::to_string(v));
      out.push_back(static_cast<int>(v));
    } while (take(','));
    if (!take(']'))
      fail("expected ']'");
    return out;
  }

  int64_t integer()
  {
    skip_spaces();
    const size_t start = at_;
    int64_t v = 0;
    while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_])) && v < 1000000)
      v = 10 * v + (text_[at_++] - '0');
    if (at_ == start)
      fail("expected an integer");
    return v;
  }

  bool take(char c)
  {
    skip_spaces();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }

  void skip_spaces()
  {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_])))
      ++at_;
  }

  [[noreturn]] void fail(const std::string& what) const
  {
    throw std::invalid_argument("'" + text_ + "': " + what + " at character " + std::to_string(at_ + 1));
  }

  const std::string& text_;
  size_t at_ = 0;
};

bool all_digits(const std::string& text)
{
  if (text.empty())
    return false;
  for (const char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      return false;
  return true;
}

} // namespace

std::vector<int> moe_layer_pattern(const std::string& text, int64_t layers)
{
  if (all_digits(text)) {
    const int64_t n = text.size() > 6 ? 0 : std::stoll(text);
    if (n < 1)
      throw std::invalid_argument("'" + text + "': expected a positive integer or a list expression");
    std::vector<int> pattern(static_cast<size_t>(layers));
    for (int64_t i = 0; i < layers; ++i)
      pattern[static_cast<size_t>(i)] = i % n == 0 ? 1 : 0;
    return pattern;
  }
  std::vector<int> pattern = PatternReader(text).read();
  if (static_cast<int64_t>(pattern.size()) != layers)
    throw std::invalid_argument("'" + text + "' gives " + std::to_string(pattern.size()) + " layers, the model has " +
                                std::to_string(layers) + " (expected one 0 or 1 per layer)");
  return pattern;
}

std::optional<MoeLayerLayout> moe_layer_layout(const std::vector<int>& pattern)
{
  const auto n = static_cast<int64_t>(pattern.size());
  std::vector<int64_t> moe;
  for (int64_t l = 0; l < n; ++l)
    if (pattern[static_cast<size_t>(l)] == 1)
      moe.push_back(l);
  if (moe.empty())
    return std::nullopt;
  // The period is the distance between the first two MoE layers (with one MoE layer, its position + 1); the dense
  // layers are those before it that the period alone would make MoE.
  MoeLayerLayout layout;
  layout.layer_period = moe.size() > 1 ? moe[1] - moe[0] : moe[0] + 1;
  for (int64_t l = 0; l < moe[0]; ++l)
    if ((l + 1) % layout.layer_period == 0)
      layout.dense_first_layers = l + 1;
  for (int64_t l = 0; l < n; ++l)
    if (pattern[static_cast<size_t>(l)] !=
        ((l >= layout.dense_first_layers && (l + 1) % layout.layer_period == 0) ? 1 : 0))
      return std::nullopt;
  return layout;
}

} // namespace gputwin
