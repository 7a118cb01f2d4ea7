#include "gputwin/engine/launch/process_launcher.hpp"

#include "gputwin/common/input_error.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sys/types.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

extern char** environ;

namespace gputwin::engine {

namespace {

volatile std::sig_atomic_t received_signal = 0;

extern "C" void remember_signal(int signal_number)
{
  received_signal = signal_number;
}

// Catches SIGINT and SIGTERM while the ranks run (to forward them), restoring the previous handlers after.
class SignalForwarding {
public:
  SignalForwarding()
  {
    received_signal = 0;
    struct sigaction action {};
    action.sa_handler = remember_signal;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &old_int_);
    ::sigaction(SIGTERM, &action, &old_term_);
  }
  ~SignalForwarding()
  {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

private:
  struct sigaction old_int_ {}, old_term_ {};
};

struct Child {
  int rank = 0;
  pid_t pid = -1;
  bool running = false;
};

std::string describe_status(int status)
{
  if (WIFEXITED(status))
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* name = ::strsignal(WTERMSIG(status));
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + (name ? name : "unknown") + ")";
  }
  return "stopped with wait status " + std::to_string(status);
}

int exit_code_of(int status)
{
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return 1;
}

// The environment of one rank: this process's, with the launcher's variables replacing any of the same name.
std::vector<std::string> rank_environment(const std::vector<std::pair<std::string, std::string>>& settings)
{
  std::vector<std::string> result;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text(*entry);
    bool replaced = false;
    for (const auto& [name, value] : settings)
      replaced = replaced || text.rfind(name + "=", 0) == 0;
    if (!replaced)
      result.push_back(text);
  }
  for (const auto& [name, value] : settings)
    result.push_back(name + "=" + value);
  return result;
}

std::vector<char*> pointers(std::vector<std::string>& strings)
{
  std::vector<char*> result;
  for (std::string& s : strings)
    result.push_back(s.data());
  result.push_back(nullptr);
  return result;
}

std::string make_rendezvous_directory(const std::string& parent_flag)
{
  std::string parent = parent_flag;
  if (parent.empty()) {
    const char* tmpdir = std::getenv("TMPDIR");
    parent = tmpdir && *tmpdir ? tmpdir : "/tmp";
  }
  std::string pattern = parent + "/gputwin-rendezvous-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw InputError("--rendezvous: cannot make a directory under " + parent + ": " + std::strerror(errno) +
                     " (expected an existing, writable directory)");
  return pattern;
}

void signal_groups(const std::vector<Child>& children, int signal_number)
{
  for (const Child& c : children)
    if (c.running)
      ::kill(-c.pid, signal_number); // the rank's process group: the command and whatever it started
}

// A run id unique on this host: the launcher's pid and the clock.
std::string make_run_id()
{
  char run_id[64];
  std::snprintf(run_id, sizeof run_id, "run-%ld-%llx", static_cast<long>(::getpid()),
                static_cast<unsigned long long>(std::chrono::system_clock::now().time_since_epoch().count()));
  return run_id;
}

// The rank's side of the fork: its own process group (so stopping it stops what it started), the default signal
// handlers, then the command. Exits 127 when the command cannot run.
[[noreturn]] void exec_rank(int rank, std::vector<char*>& argv, std::vector<char*>& envp, const sigset_t& previous_mask,
                            [[maybe_unused]] pid_t launcher)
{
  ::setpgid(0, 0);
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::sigprocmask(SIG_SETMASK, &previous_mask, nullptr); // a signal forwarded meanwhile now stops the rank
#ifdef __linux__
  ::prctl(PR_SET_PDEATHSIG, SIGTERM); // the launcher died (even by SIGKILL): stop too
  if (::getppid() != launcher)
    ::_exit(128 + SIGTERM);
#endif
  environ = envp.data();
  ::execvp(argv[0], argv.data());
  const std::string message = "gputwin-engine launch: rank " + std::to_string(rank) + ": cannot run '" +
                              std::string(argv[0]) + "': " + std::strerror(errno) + "\n";
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, message.data(), message.size());
  ::_exit(127);
}

// Forks rank `rank` running `argv` with `environment`. Returns its pid (the leader of its own process group), or
// -1 when fork failed (errno says why).
pid_t start_rank(int rank, std::vector<char*>& argv, std::vector<std::string> environment, pid_t launcher)
{
  std::vector<char*> envp = pointers(environment);
  // SIGINT/SIGTERM wait while a rank starts: until it has restored the default handlers, a signal the launcher
  // forwards would run the launcher's handler in the rank and be lost (the rank would then outlive it).
  sigset_t stop_signals, previous_mask;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  ::sigprocmask(SIG_BLOCK, &stop_signals, &previous_mask);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::sigprocmask(SIG_SETMASK, &previous_mask, nullptr);
    return -1;
  }
  if (pid == 0)
    exec_rank(rank, argv, envp, previous_mask, launcher);
  ::setpgid(pid, pid); // also here: a signal sent before the child ran setpgid must still reach its group
  ::sigprocmask(SIG_SETMASK, &previous_mask, nullptr); // the launcher's own pending signal: handled now
  return pid;
}

// Waits for every rank. The first rank that fails (non-zero exit or a signal) or a signal the launcher receives
// stops the others: SIGTERM (or the received signal) to their process groups, SIGKILL after `grace`. Returns the
// launcher's exit status (see launch_processes).
int supervise_ranks(std::vector<Child>& children, std::chrono::milliseconds grace, std::ostream& log)
{
  int running = static_cast<int>(children.size());
  int exit_code = 0;
  bool stopping = false, killed = false;
  std::chrono::steady_clock::time_point kill_at{};
  auto stop_all = [&](int signal_number) {
    signal_groups(children, signal_number);
    if (!stopping)
      kill_at = std::chrono::steady_clock::now() + grace;
    stopping = true;
  };
  while (running > 0) {
    bool reaped = false;
    for (Child& c : children) {
      if (!c.running)
        continue;
      int status = 0;
      const pid_t done = ::waitpid(c.pid, &status, WNOHANG);
      if (done != c.pid)
        continue;
      c.running = false;
      --running;
      reaped = true;
      const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      if (failed && !stopping) {
        exit_code = exit_code_of(status);
        log << "gputwin-engine launch: rank " << c.rank << " (pid " << c.pid << ") " << describe_status(status);
        if (running > 0)
          log << "; stopping the other " << running << " rank" << (running == 1 ? "" : "s");
        log << "\n";
        log.flush();
        ::kill(-c.pid, SIGKILL); // whatever the failed rank started
        stop_all(SIGTERM);
      }
    }
    if (const int signal_number = received_signal) {
      received_signal = 0;
      if (exit_code == 0)
        exit_code = 128 + signal_number;
      log << "gputwin-engine launch: received signal " << signal_number << "; forwarding it to " << running << " rank"
          << (running == 1 ? "" : "s") << "\n";
      log.flush();
      stop_all(signal_number);
    }
    if (stopping && !killed && std::chrono::steady_clock::now() >= kill_at) {
      signal_groups(children, SIGKILL);
      killed = true;
    }
    if (running > 0 && !reaped)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (stopping) // leftovers of the ranks' process groups
    for (const Child& c : children)
      ::kill(-c.pid, SIGKILL);
  return exit_code;
}

} // namespace

int launch_processes(const LaunchOptions& options, std::ostream& log)
{
  if (options.processes < 1)
    throw InputError("--nproc: expected a number of ranks >= 1, got " + std::to_string(options.processes));
  if (options.command.empty())
    throw InputError("expected the command to run after '--' (gputwin-engine launch --nproc N -- COMMAND ARGS...)");
  const std::string directory = make_rendezvous_directory(options.rendezvous_parent);
  const std::string run_id = make_run_id();

  std::vector<std::string> arguments = options.command;
  std::vector<char*> argv = pointers(arguments);
  const SignalForwarding forwarding;
  std::cout.flush(); // a child must not inherit (and print again) what the launcher has buffered
  std::cerr.flush();
  log.flush();
  const pid_t launcher = ::getpid();
  std::vector<Child> children;
  for (int rank = 0; rank < options.processes; ++rank) {
    const pid_t pid = start_rank(rank, argv,
                                 rank_environment({{"GPUTWIN_RANK", std::to_string(rank)},
                                                   {"GPUTWIN_WORLD_SIZE", std::to_string(options.processes)},
                                                   {"GPUTWIN_LOCAL_RANK", std::to_string(rank)},
                                                   {"GPUTWIN_RENDEZVOUS_DIR", directory},
                                                   {"GPUTWIN_RUN_ID", run_id}}),
                                 launcher);
    if (pid < 0) {
      log << "gputwin-engine launch: cannot start rank " << rank << ": fork failed: " << std::strerror(errno)
          << "; stopping the other ranks\n";
      signal_groups(children, SIGKILL);
      for (Child& c : children)
        ::waitpid(c.pid, nullptr, 0);
      std::filesystem::remove_all(directory);
      return 1;
    }
    children.push_back(Child{rank, pid, true});
  }

  const int exit_code = supervise_ranks(children, options.grace, log);
  std::error_code ignored;
  std::filesystem::remove_all(directory, ignored);
  return exit_code;
}

} // namespace gputwin::engine
