#pragma once
// `gputwin-engine launch`: runs N copies of a command on this node, one per rank, each told who it is through
// the environment (comm/process_rank.hpp: GPUTWIN_RANK, GPUTWIN_WORLD_SIZE, GPUTWIN_LOCAL_RANK,
// GPUTWIN_RENDEZVOUS_DIR, GPUTWIN_RUN_ID), with a fresh rendezvous directory and run id. It waits for all of
// them; when one fails (non-zero exit or a signal) it stops the others (SIGTERM to each rank's process group,
// SIGKILL after the grace period) so that no rank waits forever for a dead peer; SIGINT and SIGTERM sent to
// the launcher are forwarded to every rank.

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

namespace gputwin::engine {

struct LaunchOptions {
  int processes = 1;                      // ranks, >= 1
  std::string rendezvous_parent;          // where the run's directory is made; empty: $TMPDIR, else /tmp
  std::vector<std::string> command;       // program (searched in PATH) and its arguments
  std::chrono::milliseconds grace{10000}; // from SIGTERM to SIGKILL when stopping ranks
};

// Runs the ranks and returns the launcher's exit status: 0 when every rank exited 0; else the first failed
// rank's exit status, or 128 + its signal (128 + the signal the launcher received when interrupted). One line
// on `log` says which rank failed and how. Throws InputError for bad options or a directory it cannot make.
int launch_processes(const LaunchOptions& options, std::ostream& log);

} // namespace gputwin::engine
