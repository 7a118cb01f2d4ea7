// The connections of a TcpWorld: a sender and a receiver thread per peer, mailboxes by source rank.
#include "tcp_transport.hpp"

#include <algorithm>
#include <sys/socket.h>
#include <unistd.h>

namespace gputwin::engine::tcp {

namespace {
using Clock = std::chrono::steady_clock;
constexpr uint32_t frame_magic = 0x47544d53;       // "GTMS"
constexpr int64_t max_message_bytes = int64_t{1} << 40; // a frame claiming more is garbage

int64_t now_ns()
{
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}
} // namespace

Transport::Transport(int rank, std::vector<int> sockets, std::chrono::milliseconds timeout)
    : rank_(rank), timeout_(timeout), peers_(sockets.size())
{
  for (size_t r = 0; r < sockets.size(); ++r)
    peers_[r].fd = sockets[r];
  for (int r = 0; r < size(); ++r) {
    if (r == rank_)
      continue;
    Peer& p = peers_[static_cast<size_t>(r)];
    p.sender = std::thread([this, r] { send_loop(r); });
    p.receiver = std::thread([this, r] { receive_loop(r); });
  }
}

Transport::~Transport()
{
  if (!closed_)
    shut_down(false);
}

bool Transport::stopping() const
{
  if (stop_.load())
    return true;
  const int64_t deadline = close_deadline_ns_.load();
  return deadline != 0 && now_ns() > deadline;
}

void Transport::fail_peer(int peer, const std::string& why)
{
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string& failure = peers_[static_cast<size_t>(peer)].failure;
    if (failure.empty())
      failure = why;
  }
  mail_cv_.notify_all();
  out_cv_.notify_all();
}

void Transport::send_loop(int peer)
{
  Peer& p = peers_[static_cast<size_t>(peer)];
  const std::function<bool()> stop = [this] { return stop_.load(); };
  for (;;) {
    Outgoing next;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      out_cv_.wait(lock, [&] { return stop_.load() || !p.failure.empty() || !p.outbox.empty() || p.draining; });
      if (stop_.load() || !p.failure.empty())
        return;
      if (p.outbox.empty()) { // draining, and everything is sent: tell the peer this rank is done
        ::shutdown(p.fd, SHUT_WR);
        return;
      }
      next = std::move(p.outbox.front());
      p.outbox.pop_front();
    }
    IoResult r = write_exact(p.fd, &next.header, sizeof next.header, timeout_, stop);
    if (r.status == IoStatus::Done && next.header.bytes > 0)
      r = write_exact(p.fd, next.payload->data(), static_cast<size_t>(next.header.bytes), timeout_, stop);
    if (r.status == IoStatus::Stopped)
      return;
    if (r.status != IoStatus::Done) {
      fail_peer(peer, r.error);
      return;
    }
  }
}

void Transport::receive_loop(int peer)
{
  Peer& p = peers_[static_cast<size_t>(peer)];
  const std::function<bool()> stop = [this] { return stopping(); };
  for (;;) {
    Message m;
    IoResult r = read_exact(p.fd, &m.header, sizeof m.header, timeout_, true, stop);
    if (r.status == IoStatus::Done &&
        (m.header.magic != frame_magic || m.header.bytes < 0 || m.header.bytes > max_message_bytes))
      r = {IoStatus::Failed, "sent a malformed frame (not a gputwin-engine rank of this run?)"};
    if (r.status == IoStatus::Done && m.header.bytes > 0) {
      m.data.resize(static_cast<size_t>(m.header.bytes));
      r = read_exact(p.fd, m.data.data(), m.data.size(), timeout_, false, stop);
      if (r.status == IoStatus::Closed)
        r = {IoStatus::Failed, "closed the connection in the middle of a message"};
    }
    if (r.status == IoStatus::Stopped)
      return;
    if (r.status == IoStatus::Closed) { // the peer is done sending (or its process ended)
      {
        std::lock_guard<std::mutex> lock(mutex_);
        p.finished = true;
      }
      mail_cv_.notify_all();
      return;
    }
    if (r.status == IoStatus::Failed) {
      fail_peer(peer, r.error);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      p.inbox.push_back(std::move(m));
    }
    mail_cv_.notify_all();
  }
}

void Transport::post(int destination, const Header& header, std::shared_ptr<const std::vector<char>> payload,
                     const std::string& call)
{
  Header h = header;
  h.magic = frame_magic;
  h.bytes = payload ? static_cast<int64_t>(payload->size()) : 0;
  Peer& p = peers_.at(static_cast<size_t>(destination));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (destination == rank_) {
      Message m;
      m.header = h;
      if (payload)
        m.data = *payload;
      p.inbox.push_back(std::move(m));
    } else {
      if (!p.failure.empty())
        throw CommError(call + ": rank " + std::to_string(destination) + " " + p.failure);
      p.outbox.push_back({h, std::move(payload)});
    }
  }
  (destination == rank_ ? mail_cv_ : out_cv_).notify_all();
}

Message Transport::take(int source, const std::function<bool(const Header&)>& match, const std::string& call)
{
  const Clock::time_point deadline = Clock::now() + timeout_;
  Peer& p = peers_.at(static_cast<size_t>(source));
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    const auto it = std::find_if(p.inbox.begin(), p.inbox.end(), [&](const Message& m) { return match(m.header); });
    if (it != p.inbox.end()) {
      Message m = std::move(*it);
      p.inbox.erase(it);
      return m;
    }
    if (!p.failure.empty())
      throw CommError(call + ": rank " + std::to_string(source) + " " + p.failure);
    if (p.finished)
      throw CommError(call + ": rank " + std::to_string(source) +
                      " closed the connection (it finished, exited or failed) without sending what this rank waits for");
    if (closed_ || stop_.load())
      throw CommError(call + ": this rank's connections are closed");
    if (Clock::now() >= deadline)
      throw CommError(call + ": waited " + describe(timeout_) + " for rank " + std::to_string(source) +
                      " (GPUTWIN_RENDEZVOUS_TIMEOUT_S)");
    mail_cv_.wait_until(lock, deadline);
  }
}

void Transport::close()
{
  if (closed_)
    return;
  shut_down(true);
}

void Transport::abort()
{
  if (!closed_)
    shut_down(false);
}

void Transport::shut_down(bool orderly)
{
  if (orderly) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (Peer& p : peers_)
        p.draining = true;
    }
    out_cv_.notify_all();
    for (Peer& p : peers_)
      if (p.sender.joinable())
        p.sender.join();
    // Each peer shuts its side once it is done too; its receiver then sees the end and returns.
    close_deadline_ns_.store(now_ns() + std::chrono::duration_cast<std::chrono::nanoseconds>(timeout_).count());
  } else {
    {
      std::lock_guard<std::mutex> lock(mutex_); // no thread misses the wake-up between its check and its wait
      stop_.store(true);
    }
    for (Peer& p : peers_)
      if (p.fd >= 0)
        ::shutdown(p.fd, SHUT_RDWR);
    out_cv_.notify_all();
    mail_cv_.notify_all();
  }
  for (Peer& p : peers_) {
    if (p.sender.joinable())
      p.sender.join();
    if (p.receiver.joinable())
      p.receiver.join();
    if (p.fd >= 0)
      ::close(p.fd);
    p.fd = -1;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  mail_cv_.notify_all();
}

} // namespace gputwin::engine::tcp
