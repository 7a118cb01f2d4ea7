#include "gputwin/common/interrupt.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

namespace gputwin {

namespace {

std::atomic<pid_t> children[1024]; // 0: free slot
char message_line[300] = {};       // the message, its newline, and room for a terminal's line erase
size_t message_bytes = 0;
// What restore_interrupt_handler puts back: nothing, the handler, or SIG_IGN (a child).
enum class Mode { None, Handler, Ignore };
std::atomic<Mode> mode{Mode::None};

extern "C" void on_interrupt(int)
{
  for (std::atomic<pid_t>& c : children)
    if (const pid_t pid = c.load(); pid > 0)
      ::kill(pid, SIGKILL);
  for (std::atomic<pid_t>& c : children)
    if (const pid_t pid = c.load(); pid > 0)
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
  const char* p = message_line;
  size_t left = message_bytes;
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0 && errno != EINTR)
      break;
    if (n > 0) {
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  ::_exit(130);
}

void set_handler()
{
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
}

} // namespace

void install_interrupt_handler(const std::string& message)
{
  struct sigaction current {};
  if (::sigaction(SIGINT, nullptr, &current) != 0 || current.sa_handler == SIG_IGN)
    return;
  std::string line = (::isatty(STDERR_FILENO) != 0 ? "\r\033[K" : "") + message.substr(0, 255) + "\n";
  std::memcpy(message_line, line.data(), line.size());
  message_bytes = line.size();
  mode = Mode::Handler;
  set_handler();
}

void restore_interrupt_handler()
{
  if (mode == Mode::Handler)
    set_handler();
  else if (mode == Mode::Ignore)
    std::signal(SIGINT, SIG_IGN);
}

void register_child(pid_t pid)
{
  for (std::atomic<pid_t>& c : children) {
    pid_t expected = 0;
    if (c.compare_exchange_strong(expected, pid))
      return;
  }
}

void forget_child(pid_t pid)
{
  for (std::atomic<pid_t>& c : children) {
    pid_t expected = pid;
    if (c.compare_exchange_strong(expected, 0))
      return;
  }
}

void ignore_interrupts_in_child()
{
  std::signal(SIGINT, SIG_IGN);
  for (std::atomic<pid_t>& c : children)
    c.store(0);
  mode = Mode::Ignore;
}

} // namespace gputwin
