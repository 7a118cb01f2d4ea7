#pragma once
// Doubles as text that reads back to the same bits: C99 hex floats ("%a"), for results passed between processes
// (a steady-state sample run in a child, steady_state.hpp). Plain C++.

#include <cstdio>
#include <string>

namespace gputwin::sim {

// Appends `x` to `text` as a hex float and a space; std::strtod reads it back exactly.
inline void append_exact(std::string& text, double x)
{
  char number[40];
  std::snprintf(number, sizeof number, "%a ", x);
  text += number;
}

} // namespace gputwin::sim
