#pragma once
// Bytes as short texts for messages and tables.

// "74.3 GiB" from 1 GiB up, else "512 MiB".

#include <cstdio>
#include <string>

namespace gputwin {

inline std::string format_gib(double bytes)
{
  char text[48];
  if (bytes >= 1073741824.0)
    std::snprintf(text, sizeof text, "%.1f GiB", bytes / 1073741824.0);
  else
    std::snprintf(text, sizeof text, "%.0f MiB", bytes / 1048576.0);
  return text;
}

// Bytes as GiB with one decimal and no unit, for a column or a sentence that names the unit: "74.3".
inline std::string format_gib_number(double bytes)
{
  char text[48];
  std::snprintf(text, sizeof text, "%.1f", bytes / 1073741824.0);
  return text;
}

} // namespace gputwin
