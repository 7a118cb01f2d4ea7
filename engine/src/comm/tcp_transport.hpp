#pragma once
// The sockets under TcpWorld (private to engine/src/comm): connecting the full mesh of one run, and moving
// framed messages over it. Each connection has a sender thread (draining a queue, so posting never blocks) and
// a receiver thread (always reading, so two ranks that send each other large messages before receiving cannot
// deadlock on full socket buffers); what arrives waits in a mailbox per source rank until a call takes it.

#include "gputwin/engine/comm/communicator.hpp"
#include "gputwin/engine/comm/file_rendezvous.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gputwin::engine::tcp {

// What a message is for: one member's share of a collective, or a point-to-point message.
enum class Kind : uint32_t { Collective = 1, PointToPoint = 2 };

// The frame on the wire, in host byte order (every rank of a run runs this binary on the same architecture).
struct Header {
  uint32_t magic = 0;
  uint32_t kind = 0;
  uint64_t group = 0;    // the communicator's group (a hash of its members)
  int64_t tag = 0;       // PointToPoint: the send's tag; Collective: which collective
  int64_t sequence = 0;  // PointToPoint: the sender's sequence; Collective: the group's collective count
  int64_t bytes = 0;     // payload that follows
};

struct Message {
  Header header;
  std::vector<char> data;
};

// Reading and writing a non-blocking socket completely, retrying EINTR and partial transfers. A transfer fails
// when the socket makes no progress for `stall` (a read with `idle_ok` waits without limit for its first byte)
// and stops early when `stop()` turns true.
enum class IoStatus { Done, Closed, Stopped, Failed };
struct IoResult {
  IoStatus status = IoStatus::Done;
  std::string error; // Failed: what went wrong
};
IoResult read_exact(int fd, void* data, size_t bytes, std::chrono::milliseconds stall, bool idle_ok,
                    const std::function<bool()>& stop);
IoResult write_exact(int fd, const void* data, size_t bytes, std::chrono::milliseconds stall,
                     const std::function<bool()>& stop);
// "12 s" or "1500 ms".
std::string describe(std::chrono::milliseconds duration);

// Listens on an ephemeral port of `host`, publishes "host:port" as rendezvous blob "<rank>.address", reads
// every other rank's and connects one socket to each (the lower rank connects, the higher accepts). Returns the
// sockets by peer rank (-1 for this rank). Every wait ends by `timeout`; throws CommError naming the peer.
std::vector<int> connect_mesh(int rank, int size, const std::string& host, const FileRendezvous& rendezvous,
                              std::chrono::milliseconds timeout);

class Transport {
public:
  // Takes the sockets of connect_mesh and starts a sender and a receiver thread per peer.
  Transport(int rank, std::vector<int> sockets, std::chrono::milliseconds timeout);
  ~Transport(); // without close(): drops every connection at once (peers waiting on this rank see it closed)
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(peers_.size()); }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Queues a message to `destination` (this rank: straight into its own mailbox) and returns. `payload` may
  // be shared by the posts of one collective. Throws CommError when the connection has failed.
  void post(int destination, const Header& header, std::shared_ptr<const std::vector<char>> payload,
            const std::string& call);
  // Waits for the first message from `source` that `match` accepts and removes it from the mailbox. Throws
  // CommError naming `call` and the peer when the peer closed its connection or failed, or after timeout().
  Message take(int source, const std::function<bool(const Header&)>& match, const std::string& call);
  // The orderly end: sends what is queued, tells every peer this rank is done, and waits (up to timeout())
  // until every peer has said the same, so no message in flight is lost.
  void close();
  // Drops every connection at once (what the destructor does without close()).
  void abort();

private:
  struct Outgoing {
    Header header;
    std::shared_ptr<const std::vector<char>> payload;
  };
  struct Peer {
    int fd = -1;
    std::thread sender, receiver;
    std::deque<Outgoing> outbox;
    std::deque<Message> inbox;
    bool draining = false;
    bool finished = false; // the peer closed its sending side: nothing more will come from it
    std::string failure; // non-empty: why nothing more comes from (or goes to) this peer
  };

  void send_loop(int peer);
  void receive_loop(int peer);
  bool stopping() const;
  void fail_peer(int peer, const std::string& why);
  void shut_down(bool orderly);

  int rank_;
  std::chrono::milliseconds timeout_;
  std::vector<Peer> peers_; // by rank; this rank's entry holds only its own inbox
  std::mutex mutex_;
  std::condition_variable mail_cv_, out_cv_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> close_deadline_ns_{0}; // close(): receivers give up waiting for a peer's end after this
  bool closed_ = false;
};

} // namespace gputwin::engine::tcp
