#pragma once
// Runs the built binaries the way a user does and captures what they print.

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace gputwin::testing {

struct CliResult {
  int exit_code = -1; // -1 if killed by a signal (a crash)
  std::string output;
};

// Runs `<program> <arguments>` (a shell-quoted string) with stdout or stderr captured.
inline CliResult run_program(const std::string& program, const std::string& arguments, bool capture_stderr)
{
  const std::string command = "'" + program + "' " + arguments + (capture_stderr ? " 2>&1 >/dev/null" : " 2>/dev/null");
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

#ifdef GPUTWIN_CLI
// Runs the built `gputwin`.
inline CliResult run_gputwin(const std::string& arguments, bool capture_stderr)
{
  return run_program(GPUTWIN_CLI, arguments, capture_stderr);
}

// Bad input: `gputwin <arguments>` must exit with a status > 0 (not a crash) and print exactly one line on
// stderr, an "error: " containing `expected`.
inline void expect_one_line_error(const std::string& arguments, const std::string& expected)
{
  SCOPED_TRACE(arguments);
  const CliResult r = run_gputwin(arguments, true);
  EXPECT_GT(r.exit_code, 0) << "must fail with an exit status, not crash";
  EXPECT_NE(r.output.find(expected), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("error: "), std::string::npos) << r.output;
  ASSERT_FALSE(r.output.empty());
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "expected one line: " << r.output;
}
#endif

// The whole of file `path` (empty if it cannot be read).
inline std::string read_file(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

} // namespace gputwin::testing
