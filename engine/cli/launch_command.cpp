#include "commands.hpp"

#include "gputwin/engine/launch/process_launcher.hpp"
#include "gputwin/common/arg_parser.hpp"
#include "gputwin/common/input_error.hpp"

#include <algorithm>
#include <iostream>

namespace gputwin::engine::cli {

int run_launch(const std::vector<std::string>& args, std::ostream& out)
{
  gputwin::cli::ArgParser parser("gputwin-engine launch",
                                 "run one process per rank on this node: launch --nproc N [--rendezvous DIR] -- "
                                 "COMMAND ARGS... (each gets GPUTWIN_RANK, GPUTWIN_WORLD_SIZE, GPUTWIN_LOCAL_RANK, "
                                 "GPUTWIN_RENDEZVOUS_DIR, GPUTWIN_RUN_ID)");
  parser.add_option("--nproc", "N", "ranks to start, one process each (one GPU each for train --comm nccl)");
  parser.add_option("--rendezvous", "DIR", "where to make the run's rendezvous directory (default $TMPDIR or /tmp)");
  parser.add_option("--grace-seconds", "S", "from SIGTERM to SIGKILL when stopping the ranks after a failure "
                                            "(default 10)");
  const auto separator = std::find(args.begin(), args.end(), std::string("--"));
  const gputwin::cli::ParsedArgs parsed = parser.parse(std::vector<std::string>(args.begin(), separator));
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  LaunchOptions options;
  const std::optional<int64_t> processes = parsed.integer("--nproc");
  if (!processes)
    throw InputError("--nproc: expected the number of ranks to start (launch --nproc N -- COMMAND ARGS...)");
  if (*processes < 1 || *processes > 4096)
    throw InputError("--nproc: expected a number of ranks in [1, 4096], got " + std::to_string(*processes));
  options.processes = static_cast<int>(*processes);
  options.rendezvous_parent = parsed.value("--rendezvous").value_or("");
  const int64_t grace_seconds = parsed.integer("--grace-seconds").value_or(10);
  if (grace_seconds < 0)
    throw InputError("--grace-seconds: expected a number of seconds >= 0, got " + std::to_string(grace_seconds));
  options.grace = std::chrono::seconds(grace_seconds);
  if (separator != args.end())
    options.command.assign(separator + 1, args.end());
  if (options.command.empty())
    throw InputError("expected '--' and the command to run (launch --nproc N -- COMMAND ARGS...)");
  out.flush();
  return launch_processes(options, std::cerr);
}

} // namespace gputwin::engine::cli
