#pragma once
// Small text helpers the CSV, table and trace readers share.

#include <cctype>
#include <string>
#include <string_view>

namespace gputwin {

// `text` without leading and trailing white space (std::isspace: blanks, tabs, carriage returns, newlines).
inline std::string trim(const std::string& text)
{
  size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin])))
    ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1])))
    --end;
  return text.substr(begin, end - begin);
}

// Text from an input file as a one-line error message shows it: control characters (a line break would split the
// message) as '?', at most 120 characters, "..." when cut.
inline std::string printable_excerpt(std::string_view text)
{
  std::string out(text.substr(0, 120));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = '?';
  return text.size() > 120 ? out + "..." : out;
}

} // namespace gputwin
