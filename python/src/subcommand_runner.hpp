#pragma once
// One `gputwin` subcommand run in a forked child process, its report, notes and error brought back whole: how the
// Python module runs every call. SimGrid builds one platform per process, so no subcommand runs in Python's own
// process, and a child returns all of its memory when it exits.

#include <functional>
#include <string>
#include <vector>

namespace gputwin::python {

// How a subcommand ended, in the CLI's classes (models/flags/src/subcommands.cpp).
enum class Outcome {
  Report,        // it returned: `text` is its report (what the CLI prints on stdout)
  InputError,    // bad input (InputError, TraceError, an unwritable output file): the CLI's "error:", exit 2
  InternalError, // a broken invariant (std::logic_error): the CLI's "internal error:", exit 1
  Failed,        // any other exception (the file system, a device): the CLI's "failed:", exit 1
};

struct SubcommandResult {
  Outcome outcome = Outcome::Report;
  int exit_status = 0; // the subcommand's return value (Report only)
  std::string text;    // the report, or the exception's one-line message
  std::string notes;   // what the child wrote on its stdout and stderr: notes and warnings, as the CLI prints them
};

// Runs the subcommand `name` of `gputwin` (cli::gputwin_subcommands()) with `args` (after the subcommand name) in
// a forked child (sim::run_isolated), its stdout and stderr captured as `notes`. `on_wait` is called about
// once a second in the parent while the child runs; an exception it throws stops the child (SIGTERM) and
// propagates. Throws InputError for an unknown subcommand (the CLI's message), std::runtime_error when the child
// dies without an answer (a signal, the out-of-memory killer).
// REQUIRES: the calling thread may fork (sim::run_isolated); the child runs no code of the caller's but this.
SubcommandResult run_subcommand(const std::string& name, const std::vector<std::string>& args,
                                const std::function<void()>& on_wait);

} // namespace gputwin::python
