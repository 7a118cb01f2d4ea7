#pragma once
// Runs in isolated processes: independent tasks each in a forked child, a few at a time, their results (text:
// JSON) collected through pipes. SimGrid 3.32 builds one platform per process, so every caller that runs more
// than one SimGrid simulation (search's confirmations, sweep's points, compare, the Python module, the test
// binaries run as one process) runs each here; parallelism on one machine is processes, not threads; and a
// child returns all of its memory when it exits. Plain C++ (no SimGrid header), next to the executor that needs it.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace gputwin::sim {

struct IsolatedRunCallbacks {
  // In the parent, as each task finishes (completion order), with what it returned.
  std::function<void(size_t index, const std::string& result)> on_done;
  // In the parent, about once a second while waiting (a progress bar's tick).
  std::function<void()> on_idle;
  // Names task `index` in the message when its child dies without an answer ("the point gpt-22b on 8 GPUs").
  std::function<std::string(size_t index)> describe;
};

// Runs task(i) for every i in [0, count), each in its own forked child, at most `jobs` children at a time, and
// returns what the tasks returned in index order, so the result does not depend on `jobs`. An exception thrown
// by a task is rethrown in the parent with the same message and the same kind (InputError, std::logic_error,
// else std::runtime_error), after the children still running have been stopped (SIGTERM) and reaped; so is a
// child that dies without answering (a signal, the out-of-memory killer). Ctrl-C: the children ignore SIGINT and
// are registered with common/interrupt.hpp, whose handler (when the tool installed it) kills them and exits 130.
// REQUIRES: jobs >= 1; the calling process runs no other threads (fork copies only the calling thread).
std::vector<std::string> run_isolated(size_t count, int jobs, const std::function<std::string(size_t index)>& task,
                                      const IsolatedRunCallbacks& callbacks = {});

} // namespace gputwin::sim
