#pragma once
// The `program <subcommand> [options]` front end shared by `gputwin` and `gputwin-engine`: usage, dispatch,
// and the one place where bad input becomes "program subcommand: error: ..." on stderr and exit status 2.

#include <ostream>
#include <string>
#include <vector>

namespace gputwin::cli {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args, std::ostream& out);
};

// Runs the subcommand argv[1] names with the remaining arguments, printing its report to stdout. Returns the
// exit status: the subcommand's own, 2 for bad input (InputError, a trace's TraceError among them; OutputError: one line on stderr),
// 1 for an internal error. `--help` lists the subcommands and `example`; `--version` prints `version`.
int run_subcommands(const std::string& program, const std::string& version, const std::vector<Subcommand>& subcommands,
                    const std::string& example, int argc, char** argv);

} // namespace gputwin::cli
