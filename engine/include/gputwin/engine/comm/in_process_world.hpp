#pragma once
// Every rank of a run as a thread of one process: communicators share memory, collectives reduce in member
// order (deterministic), point-to-point messages are buffered copies matched by (source, destination, tag).
// If one rank fails, abort() makes every waiting rank throw instead of hanging; a wait longer than the
// timeout throws too.

#include "gputwin/engine/comm/communicator.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace gputwin::engine {

class InProcessWorld {
public:
  explicit InProcessWorld(int world_size, std::chrono::seconds timeout = std::chrono::seconds(300));

  int size() const { return size_; }
  // The communicator of `my_world_rank` over `world_ranks` (group order). Every member must ask for the same
  // list; the shared state is created by whichever member asks first. With `device_ops` (every member's, on
  // the same device) its collectives take buffers on that device instead of host memory, moved and reduced
  // by those operations (device-to-device, no host staging). send/recv always take host memory.
  std::unique_ptr<Communicator> communicator(const std::vector<int>& world_ranks, int my_world_rank,
                                             BufferOps* device_ops = nullptr);
  // Makes every current and future wait throw CommError("... aborted: reason").
  void abort(const std::string& reason);
  bool aborted() const { return aborted_.load(); }

  struct Group {
    std::vector<int> ranks;
    std::mutex mutex;
    std::condition_variable cv;
    int arrived = 0;
    uint64_t generation = 0;
    std::vector<const void*> inputs;
  };
  struct Message {
    int64_t tag = 0;
    int64_t sequence = 0;
    std::vector<char> data;
  };

  // Blocks until every member of `group` has arrived (lock held on `group.mutex`).
  void wait_all(Group& group, std::unique_lock<std::mutex>& lock);
  void post(int source, int destination, Message message);
  Message take(int source, int destination, int64_t tag);

private:
  void check_abort() const;

  int size_;
  std::chrono::seconds timeout_;
  std::atomic<bool> aborted_{false};
  std::string abort_reason_;
  std::mutex groups_mutex_;
  std::map<std::vector<int>, std::shared_ptr<Group>> groups_;
  std::mutex mail_mutex_;
  std::condition_variable mail_cv_;
  std::map<std::pair<int, int>, std::deque<Message>> mailboxes_;
};

} // namespace gputwin::engine
