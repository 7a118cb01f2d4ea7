#include "gputwin/sim/isolated_run.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/interrupt.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <utility>

namespace gputwin::sim {

namespace {

// The first byte a child writes: how its task ended. The rest is the result, or the exception's message.
constexpr char ok_status = 'O', input_error_status = 'I', logic_error_status = 'L', other_error_status = 'E';

struct Running {
  pid_t pid = -1;
  int fd = -1;
  size_t index = 0;
  std::string data;
};

void write_all(int fd, const std::string& data)
{
  size_t written = 0;
  while (written < data.size()) {
    const ssize_t n = write(fd, data.data() + written, data.size() - written);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      _exit(3);
    written += static_cast<size_t>(n);
  }
}

// Stops (SIGTERM) and reaps the children still running: when a task failed, or the parent is unwinding.
struct Reaper {
  std::vector<Running>& running;
  ~Reaper()
  {
    for (Running& r : running) {
      kill(r.pid, SIGTERM);
      forget_child(r.pid);
      close(r.fd);
      int status = 0;
      while (waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    running.clear();
  }
};

// Runs task(index) in the child: its status byte and its result or the exception's message.
std::pair<char, std::string> run_task(const std::function<std::string(size_t)>& task, size_t index,
                                      const std::function<std::string(size_t)>& describe)
{
  try {
    return {ok_status, task(index)};
  } catch (const InputError& e) {
    return {input_error_status, e.what()};
  } catch (const std::logic_error& e) {
    return {logic_error_status, e.what()};
  } catch (const std::exception& e) {
    return {other_error_status, e.what()};
  } catch (...) {
    return {other_error_status, "unknown exception in " + describe(index)};
  }
}

} // namespace

std::vector<std::string> run_isolated(size_t count, int jobs, const std::function<std::string(size_t)>& task,
                                      const IsolatedRunCallbacks& callbacks)
{
  if (jobs < 1)
    throw std::logic_error("run_isolated: jobs must be at least 1");
  std::vector<std::optional<std::string>> results(count);
  std::vector<Running> running;
  Reaper reaper{running};
  const std::function<std::string(size_t)> describe = [&](size_t index) {
    return callbacks.describe ? callbacks.describe(index) : "task " + std::to_string(index);
  };

  const pid_t parent = getpid();
  size_t next = 0;
  while (next < count || !running.empty()) {
    while (next < count && running.size() < static_cast<size_t>(jobs)) {
      int fds[2];
      if (pipe(fds) != 0)
        throw std::runtime_error("cannot create a pipe for " + describe(next) + ": " + std::strerror(errno));
      std::cout.flush();
      std::cerr.flush();
      std::fflush(nullptr);
      const pid_t pid = fork();
      if (pid < 0) {
        const int error = errno;
        close(fds[0]);
        close(fds[1]);
        throw std::runtime_error("cannot fork a process for " + describe(next) + ": " + std::strerror(error));
      }
      if (pid == 0) {
        // Die with the parent (killed, or stopped by Ctrl-C): no orphaned point runs on. Ctrl-C reaches the whole
        // process group; the parent alone reports it and stops this child (common/interrupt.hpp).
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
          _exit(4);
        ignore_interrupts_in_child();
        close(fds[0]);
        for (const Running& r : running)
          close(r.fd);
        const auto [status, message] = run_task(task, next, describe);
        write_all(fds[1], std::string(1, status) + message);
        _exit(0);
      }
      close(fds[1]);
      register_child(pid);
      running.push_back(Running{pid, fds[0], next, {}});
      ++next;
    }

    std::vector<pollfd> polled;
    for (const Running& r : running)
      polled.push_back(pollfd{r.fd, POLLIN, 0});
    const int ready = poll(polled.data(), polled.size(), 1000);
    if (ready < 0) {
      if (errno == EINTR)
        continue;
      throw std::runtime_error(std::string("poll on the children's pipes failed: ") + std::strerror(errno));
    }
    if (ready == 0) {
      if (callbacks.on_idle)
        callbacks.on_idle();
      continue;
    }
    // Read what is there; a child whose pipe reached end of file has finished.
    for (size_t i = polled.size(); i-- > 0;) {
      if (polled[i].revents == 0)
        continue;
      Running& r = running[i];
      char buffer[65536];
      const ssize_t n = read(r.fd, buffer, sizeof buffer);
      if (n < 0 && (errno == EINTR || errno == EAGAIN))
        continue;
      if (n > 0) {
        r.data.append(buffer, static_cast<size_t>(n));
        continue;
      }
      // End of file: reap the child and decode its answer.
      Running finished = std::move(r);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      forget_child(finished.pid);
      close(finished.fd);
      int status = 0;
      while (waitpid(finished.pid, &status, 0) < 0 && errno == EINTR) {
      }
      if (finished.data.empty() || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        const std::string how = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                : WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                                    : "ended";
        throw std::runtime_error("the process running " + describe(finished.index) + " " + how + " without an answer");
      }
      const std::string message = finished.data.substr(1);
      switch (finished.data[0]) {
      case ok_status: break;
      case input_error_status: throw InputError(message);
      case logic_error_status: throw std::logic_error(message);
      default: throw std::runtime_error(message);
      }
      results[finished.index] = message;
      if (callbacks.on_done)
        callbacks.on_done(finished.index, message);
    }
    if (callbacks.on_idle)
      callbacks.on_idle();
  }

  std::vector<std::string> ordered;
  ordered.reserve(count);
  for (std::optional<std::string>& r : results)
    ordered.push_back(std::move(*r));
  return ordered;
}

} // namespace gputwin::sim
