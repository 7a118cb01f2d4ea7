#pragma once
// Runs the built `gputwin` binary the way a user does and captures what it prints.

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace gputwin::testing {

struct CliResult {
  int exit_code = -1; // -1 if killed by a signal (a crash)
  std::string output;
};

// Runs `gputwin <arguments>` (a shell-quoted string) with stdout or stderr captured.
inline CliResult run_gputwin(const std::string& arguments, bool capture_stderr)
{
  const std::string command =
      std::string("'") + GPUTWIN_CLI + "' " + arguments + (capture_stderr ? " 2>&1 >/dev/null" : " 2>/dev/null");
  CliResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr)
    return result;
  std::array<char, 4096> buffer{};
  size_t n = 0;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
    result.output.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

} // namespace gputwin::testing
