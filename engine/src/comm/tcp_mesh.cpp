// Socket I/O with timeouts, and connecting the full mesh of a run through the rendezvous directory.
#include "tcp_transport.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>

namespace gputwin::engine::tcp {

namespace {

using Clock = std::chrono::steady_clock;
constexpr uint32_t hello_magic = 0x47545743; // "GTWC"
constexpr auto poll_slice = std::chrono::milliseconds(50); // how often a waiting transfer checks stop()

struct Hello {
  uint32_t magic = hello_magic;
  int32_t rank = 0;
  int32_t size = 0;
};

// A socket closed when it goes out of scope, unless released.
class Socket {
public:
  explicit Socket(int fd = -1) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept
  {
    if (this != &other) {
      reset();
      fd_ = other.release();
    }
    return *this;
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { reset(); }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset()
  {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }

private:
  int fd_;
};

std::string error_text(int error) { return std::strerror(error); }

// Polls `fd` for `events` for at most `slice`; true when it is ready (or has an error to report).
bool ready(int fd, short events, std::chrono::milliseconds slice)
{
  pollfd p{fd, events, 0};
  const int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(slice.count(), 0)));
  if (n < 0 && errno != EINTR)
    throw CommError(std::string("poll failed: ") + error_text(errno));
  return n > 0;
}

int milliseconds_left(Clock::time_point deadline)
{
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, poll_slice.count()));
}

Socket new_socket()
{
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (s.get() < 0)
    throw CommError(std::string("tcp: cannot make a socket: ") + error_text(errno));
  return s;
}

void set_no_delay(int fd)
{
  const int on = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
}

sockaddr_in resolve(const std::string& host, uint16_t port, const std::string& what)
{
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int status = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (status != 0 || found == nullptr)
    throw CommError("tcp: cannot resolve " + what + " '" + host + "': " + ::gai_strerror(status) +
                    " (expected an IPv4 address or host name; GPUTWIN_TCP_HOST)");
  sockaddr_in address{};
  std::memcpy(&address, found->ai_addr, sizeof address);
  ::freeaddrinfo(found);
  address.sin_port = htons(port);
  return address;
}

// "host:port" of the rendezvous blob `name` -> its address.
sockaddr_in parse_address(const std::string& text, const std::string& source)
{
  const size_t colon = text.rfind(':');
  char* end = nullptr;
  const long port = colon == std::string::npos ? -1 : std::strtol(text.c_str() + colon + 1, &end, 10);
  if (colon == std::string::npos || colon == 0 || end == nullptr || *end != '\0' || port <= 0 || port > 65535)
    throw CommError("tcp: " + source + " holds '" + text + "'; expected host:port");
  return resolve(text.substr(0, colon), static_cast<uint16_t>(port), "the address in " + source);
}

// Connects to `address` (retrying while it refuses) until `deadline`.
Socket connect_to(const sockaddr_in& address, int peer, Clock::time_point deadline, std::chrono::milliseconds timeout)
{
  std::string last = "no answer";
  while (Clock::now() < deadline) {
    Socket s = new_socket();
    if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0)
      return s;
    if (errno == EINPROGRESS || errno == EINTR) {
      while (Clock::now() < deadline && !ready(s.get(), POLLOUT, std::chrono::milliseconds(milliseconds_left(deadline)))) {
      }
      int error = 0;
      socklen_t length = sizeof error;
      ::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &error, &length);
      if (error == 0 && Clock::now() < deadline)
        return s;
      last = error != 0 ? error_text(error) : "no answer";
    } else {
      last = error_text(errno);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw CommError("tcp: cannot connect to rank " + std::to_string(peer) + " within " + describe(timeout) + " (" +
                  last + "; GPUTWIN_RENDEZVOUS_TIMEOUT_S)");
}

} // namespace

std::string describe(std::chrono::milliseconds duration)
{
  const int64_t ms = duration.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

IoResult read_exact(int fd, void* data, size_t bytes, std::chrono::milliseconds stall, bool idle_ok,
                    const std::function<bool()>& stop)
{
  char* p = static_cast<char*>(data);
  size_t done = 0;
  Clock::time_point last_progress = Clock::now();
  while (done < bytes) {
    const ssize_t n = ::recv(fd, p + done, bytes - done, 0);
    if (n > 0) {
      done += static_cast<size_t>(n);
      last_progress = Clock::now();
      continue;
    }
    if (n == 0)
      return done == 0 ? IoResult{IoStatus::Closed, {}}
                       : IoResult{IoStatus::Failed, "closed the connection in the middle of a message"};
    if (errno == EINTR)
      continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return {IoStatus::Failed, "connection failed (" + error_text(errno) + ")"};
    if (stop())
      return {IoStatus::Stopped, {}};
    if ((done > 0 || !idle_ok) && Clock::now() - last_progress > stall)
      return {IoStatus::Failed, "sent nothing for " + describe(stall) + " in the middle of a message"};
    ready(fd, POLLIN, poll_slice);
  }
  return {};
}

IoResult write_exact(int fd, const void* data, size_t bytes, std::chrono::milliseconds stall,
                     const std::function<bool()>& stop)
{
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  Clock::time_point last_progress = Clock::now();
  while (done < bytes) {
    const ssize_t n = ::send(fd, p + done, bytes - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      last_progress = Clock::now();
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
      return {IoStatus::Failed, "connection failed (" + error_text(errno) + ")"};
    if (stop())
      return {IoStatus::Stopped, {}};
    if (Clock::now() - last_progress > stall)
      return {IoStatus::Failed, "took nothing for " + describe(stall) + " (is it stuck?)"};
    ready(fd, POLLOUT, poll_slice);
  }
  return {};
}

std::vector<int> connect_mesh(int rank, int size, const std::string& host, const FileRendezvous& rendezvous,
                              std::chrono::milliseconds timeout)
{
  const Clock::time_point deadline = Clock::now() + timeout;
  auto expired = [&] { return Clock::now() >= deadline; };
  Socket listener = new_socket();
  const int on = 1;
  ::setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  const sockaddr_in local = resolve(host, 0, "this rank's host");
  if (::bind(listener.get(), reinterpret_cast<const sockaddr*>(&local), sizeof local) != 0)
    throw CommError("tcp: rank " + std::to_string(rank) + " cannot listen on " + host + ": " + error_text(errno) +
                    " (GPUTWIN_TCP_HOST: expected an address of this machine)");
  if (::listen(listener.get(), size) != 0)
    throw CommError(std::string("tcp: listen failed: ") + error_text(errno));
  sockaddr_in bound{};
  socklen_t length = sizeof bound;
  ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&bound), &length);
  const std::string address = host + ":" + std::to_string(ntohs(bound.sin_port));
  rendezvous.publish(std::to_string(rank) + ".address", std::vector<char>(address.begin(), address.end()));

  std::vector<Socket> sockets(static_cast<size_t>(size));
  const Hello mine{hello_magic, rank, size};
  for (int peer = rank + 1; peer < size; ++peer) { // the lower rank connects
    const std::string name = std::to_string(peer) + ".address";
    const std::vector<char> text = rendezvous.read(name);
    Socket s = connect_to(parse_address(std::string(text.begin(), text.end()), rendezvous.path(name)), peer,
                          deadline, timeout);
    const IoResult sent = write_exact(s.get(), &mine, sizeof mine, timeout, expired);
    if (sent.status != IoStatus::Done)
      throw CommError("tcp: greeting rank " + std::to_string(peer) + " failed: " +
                      (sent.error.empty() ? "timed out" : sent.error));
    set_no_delay(s.get());
    sockets[static_cast<size_t>(peer)] = std::move(s);
  }
  for (int accepted = 0; accepted < rank;) { // and the higher one accepts
    Socket s;
    while (s.get() < 0) {
      if (expired()) {
        std::string missing;
        for (int r = 0; r < rank; ++r)
          if (sockets[static_cast<size_t>(r)].get() < 0)
            missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        throw CommError("tcp: rank " + std::to_string(rank) + " waited " + describe(timeout) +
                        " for a connection from rank(s) " + missing + " (GPUTWIN_RENDEZVOUS_TIMEOUT_S)");
      }
      if (ready(listener.get(), POLLIN, std::chrono::milliseconds(milliseconds_left(deadline))))
        s = Socket(::accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    }
    Hello theirs{};
    const IoResult got = read_exact(s.get(), &theirs, sizeof theirs, timeout, false, expired);
    if (got.status != IoStatus::Done || theirs.magic != hello_magic || theirs.rank < 0 || theirs.rank >= rank ||
        sockets[static_cast<size_t>(theirs.rank)].get() >= 0)
      continue; // not a rank of this run (or a repeat): ignore it, keep waiting for the real ones
    if (theirs.size != size)
      throw CommError("tcp: rank " + std::to_string(theirs.rank) + " runs a world of " + std::to_string(theirs.size) +
                      " ranks, this rank one of " + std::to_string(size) + " (expected the same world size)");
    set_no_delay(s.get());
    sockets[static_cast<size_t>(theirs.rank)] = std::move(s);
    ++accepted;
  }
  std::vector<int> fds(static_cast<size_t>(size), -1);
  for (int r = 0; r < size; ++r)
    fds[static_cast<size_t>(r)] = sockets[static_cast<size_t>(r)].release();
  return fds;
}

} // namespace gputwin::engine::tcp
