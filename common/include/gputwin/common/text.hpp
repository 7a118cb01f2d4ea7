#pragma once
// Small text helpers the CSV and table readers share.

#include <cctype>
#include <string>

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

} // namespace gputwin
