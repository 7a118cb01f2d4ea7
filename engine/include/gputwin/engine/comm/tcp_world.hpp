#pragma once
// One process per rank over TCP sockets (CommKind::Tcp, the CPU backend): the multi-process run without a GPU.
// Every rank listens on an ephemeral port, publishes "host:port" through the run's FileRendezvous
// ("<rank>.address") and connects one socket to every other rank. The communicators of its groups share those
// sockets. A collective sends this member's buffer to every other member and reduces all members' buffers in
// member order in fp32, rounding once, exactly as InProcessWorld does, so a multi-process run computes
// bit-identical results to the threaded one. send() queues and returns at once (a sender thread per
// connection); a receiver thread per connection keeps reading, so ranks that send each other large messages
// before receiving cannot deadlock. Every wait ends within the timeout (GPUTWIN_RENDEZVOUS_TIMEOUT_S), and a
// peer that closes its connection or fails makes the calls waiting on it throw CommError naming the peer and
// the call. Host memory only.

#include "gputwin/engine/comm/communicator.hpp"
#include "gputwin/engine/comm/file_rendezvous.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace gputwin::engine {

namespace tcp {
class Transport;
}

// The address this rank listens on and publishes: GPUTWIN_TCP_HOST (an IPv4 address or a host name other
// ranks can reach, for a run over several machines) or 127.0.0.1 (one machine).
std::string tcp_host_from_environment();

class TcpWorld {
public:
  // Connects the full mesh of `world_size` ranks; every rank of the run makes its TcpWorld with the same
  // rendezvous directory and run id. Throws CommError naming the peer when one does not appear within `timeout`.
  TcpWorld(int rank, int world_size, const FileRendezvous& rendezvous, std::chrono::milliseconds timeout,
           const std::string& host = tcp_host_from_environment());
  // Without close(): drops every connection at once (what a failing rank does; its peers' waits then throw).
  ~TcpWorld();
  TcpWorld(const TcpWorld&) = delete;
  TcpWorld& operator=(const TcpWorld&) = delete;

  int rank() const;
  int size() const;
  // The communicator of this rank over `world_ranks` (group order; this rank must be one of them). Every
  // member asks for the same list once; its collectives must be called in the same order by every member.
  std::unique_ptr<Communicator> communicator(const std::vector<int>& world_ranks);
  // The orderly end, after the last call of every communicator: sends what is queued and waits (up to the
  // timeout) until every peer has ended too. The communicators must not be used afterwards.
  void close();

private:
  std::shared_ptr<tcp::Transport> transport_;
};

} // namespace gputwin::engine
