#include "gputwin/engine/comm/in_process_world.hpp"

#include "gputwin/engine/comm/member_reduction.hpp"

#include <algorithm>
#include <cstring>

namespace gputwin::engine {

namespace {

constexpr auto poll_interval = std::chrono::milliseconds(20); // how often a waiting rank checks for abort

class InProcessCommunicator final : public Communicator {
public:
  InProcessCommunicator(InProcessWorld& world, std::shared_ptr<InProcessWorld::Group> group, int index, BufferOps* ops)
      : world_(world), group_(std::move(group)), index_(index), ops_(ops)
  {
  }

  int rank() const override { return index_; }
  int size() const override { return static_cast<int>(group_->ranks.size()); }
  const std::vector<int>& world_ranks() const override { return group_->ranks; }
  bool reaches(Device device) const override
  {
    return ops_ != nullptr ? device == ops_->device() : device == Device::Cpu;
  }

  void all_reduce(void* data, int64_t count, DType dtype, ReduceOp op) override
  {
    require_float_type(dtype, "all_reduce");
    if (ops_ != nullptr) {
      // Reduce every member's buffer into this member's scratch, then (after every member has read) copy it in.
      void* result = ops_->scratch(count * dtype_bytes(dtype));
      exchange(data, [&](const std::vector<const void*>& inputs) {
        ops_->reduce(result, inputs, 0, count, dtype, op);
        ops_->complete();
      });
      ops_->copy(data, result, count * dtype_bytes(dtype));
      return;
    }
    std::vector<float> result;
    exchange(data,
             [&](const std::vector<const void*>& inputs) { result = reduce_members(inputs, 0, count, dtype, op); });
    store_elements(data, dtype, result); // after every member has read its inputs
  }

  void all_gather(const void* in, void* out, int64_t count, DType dtype) override
  {
    const int64_t bytes = count * dtype_bytes(dtype);
    if (ops_ != nullptr) {
      exchange(in, [&](const std::vector<const void*>& inputs) {
        for (size_t r = 0; r < inputs.size(); ++r)
          ops_->copy(static_cast<char*>(out) + static_cast<int64_t>(r) * bytes, inputs[r], bytes);
        ops_->complete();
      });
      return;
    }
    exchange(in, [&](const std::vector<const void*>& inputs) {
      for (size_t r = 0; r < inputs.size(); ++r)
        std::memcpy(static_cast<char*>(out) + static_cast<int64_t>(r) * bytes, inputs[r], static_cast<size_t>(bytes));
    });
  }

  void reduce_scatter(const void* in, void* out, int64_t count, DType dtype) override
  {
    require_float_type(dtype, "reduce_scatter");
    if (ops_ != nullptr) {
      exchange(in, [&](const std::vector<const void*>& inputs) {
        ops_->reduce(out, inputs, static_cast<int64_t>(index_) * count, count, dtype, ReduceOp::Sum);
        ops_->complete();
      });
      return;
    }
    exchange(in, [&](const std::vector<const void*>& inputs) {
      store_elements(out, dtype,
                     reduce_members(inputs, static_cast<int64_t>(index_) * count, count, dtype, ReduceOp::Sum));
    });
  }

  void send(const void* data, int64_t bytes, int peer, int64_t tag, int64_t sequence) override
  {
    InProcessWorld::Message message;
    message.tag = tag;
    message.sequence = sequence;
    message.data.assign(static_cast<const char*>(data), static_cast<const char*>(data) + bytes);
    world_.post(group_->ranks[static_cast<size_t>(index_)], group_->ranks.at(static_cast<size_t>(peer)),
                std::move(message));
  }

  int64_t recv(void* data, int64_t bytes, int peer, int64_t tag) override
  {
    InProcessWorld::Message message =
        world_.take(group_->ranks.at(static_cast<size_t>(peer)), group_->ranks[static_cast<size_t>(index_)], tag);
    if (static_cast<int64_t>(message.data.size()) != bytes)
      throw CommError("recv from rank " + std::to_string(group_->ranks[static_cast<size_t>(peer)]) + ": expected " +
                      std::to_string(bytes) + " bytes, got " + std::to_string(message.data.size()));
    std::memcpy(data, message.data.data(), static_cast<size_t>(bytes));
    return message.sequence;
  }

  void all_to_all_v(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                    const std::vector<int64_t>& recv_bytes) override
  {
    const auto n = static_cast<size_t>(size());
    if (send_bytes.size() != n || recv_bytes.size() != n)
      throw CommError("all_to_all_v: expected " + std::to_string(n) + " send and receive sizes");
    // Each member publishes where its blocks are; member i reads block i of every member j.
    struct Blocks {
      const char* data;
      const std::vector<int64_t>* bytes;
    } mine{static_cast<const char*>(in), &send_bytes};
    char* dst = static_cast<char*>(out);
    exchange(&mine, [&](const std::vector<const void*>& inputs) {
      int64_t at = 0;
      for (size_t j = 0; j < n; ++j) {
        const auto* b = static_cast<const Blocks*>(inputs[j]);
        int64_t offset = 0;
        for (int i = 0; i < index_; ++i)
          offset += (*b->bytes)[static_cast<size_t>(i)];
        const int64_t bytes = (*b->bytes)[static_cast<size_t>(index_)];
        if (bytes != recv_bytes[j])
          throw CommError("all_to_all_v: member " + std::to_string(j) + " sends " + std::to_string(bytes) +
                          " bytes, expected " + std::to_string(recv_bytes[j]));
        if (bytes > 0 && ops_ != nullptr)
          ops_->copy(dst + at, b->data + offset, bytes);
        else if (bytes > 0)
          std::memcpy(dst + at, b->data + offset, static_cast<size_t>(bytes));
        at += bytes;
      }
      if (ops_ != nullptr)
        ops_->complete();
    });
  }

  void barrier() override
  {
    exchange(nullptr, [](const std::vector<const void*>&) {});
  }

private:
  // Publishes `input`, waits for every member, runs `read` on all members' inputs, and waits again so no
  // member reuses its input buffer while another still reads it.
  template <typename Read>
  void exchange(const void* input, Read&& read)
  {
    if (ops_ != nullptr && input != nullptr)
      ops_->publish(); // peers read `input` once this member's pending work on it is done
    InProcessWorld::Group& g = *group_;
    std::unique_lock<std::mutex> lock(g.mutex);
    g.inputs[static_cast<size_t>(index_)] = input;
    world_.wait_all(g, lock);
    const std::vector<const void*> inputs = g.inputs;
    lock.unlock();
    read(inputs);
    lock.lock();
    world_.wait_all(g, lock);
  }

  InProcessWorld& world_;
  std::shared_ptr<InProcessWorld::Group> group_;
  int index_;
  BufferOps* ops_; // null: host buffers
};

} // namespace

InProcessWorld::InProcessWorld(int world_size, std::chrono::seconds timeout) : size_(world_size), timeout_(timeout)
{
  if (world_size < 1)
    throw std::invalid_argument("InProcessWorld: world size must be >= 1");
}

std::unique_ptr<Communicator> InProcessWorld::communicator(const std::vector<int>& world_ranks, int my_world_rank,
                                                           BufferOps* device_ops)
{
  const auto me = std::find(world_ranks.begin(), world_ranks.end(), my_world_rank);
  if (me == world_ranks.end())
    throw std::invalid_argument("InProcessWorld::communicator: rank " + std::to_string(my_world_rank) +
                                " is not a member of the group");
  for (const int r : world_ranks)
    if (r < 0 || r >= size_)
      throw std::invalid_argument("InProcessWorld::communicator: rank " + std::to_string(r) + " outside the world");
  std::shared_ptr<Group> group;
  {
    std::lock_guard<std::mutex> lock(groups_mutex_);
    std::shared_ptr<Group>& slot = groups_[world_ranks];
    if (!slot) {
      slot = std::make_shared<Group>();
      slot->ranks = world_ranks;
      slot->inputs.assign(world_ranks.size(), nullptr);
    }
    group = slot;
  }
  return std::make_unique<InProcessCommunicator>(*this, group, static_cast<int>(me - world_ranks.begin()), device_ops);
}

void InProcessWorld::abort(const std::string& reason)
{
  {
    std::lock_guard<std::mutex> lock(mail_mutex_);
    if (!aborted_.load())
      abort_reason_ = reason;
    aborted_.store(true);
  }
  mail_cv_.notify_all();
}

void InProcessWorld::check_abort() const
{
  if (aborted_.load())
    throw CommError("communication aborted: another rank failed");
}

void InProcessWorld::wait_all(Group& group, std::unique_lock<std::mutex>& lock)
{
  const uint64_t generation = group.generation;
  if (++group.arrived == static_cast<int>(group.ranks.size())) {
    group.arrived = 0;
    ++group.generation;
    group.cv.notify_all();
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (group.generation == generation) {
    group.cv.wait_for(lock, poll_interval);
    if (group.generation != generation)
      break;
    check_abort();
    if (std::chrono::steady_clock::now() > deadline)
      throw CommError("collective timed out after " + std::to_string(timeout_.count()) + " s waiting for peers");
  }
}

void InProcessWorld::post(int source, int destination, Message message)
{
  {
    std::lock_guard<std::mutex> lock(mail_mutex_);
    mailboxes_[{source, destination}].push_back(std::move(message));
  }
  mail_cv_.notify_all();
}

InProcessWorld::Message InProcessWorld::take(int source, int destination, int64_t tag)
{
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  std::unique_lock<std::mutex> lock(mail_mutex_);
  for (;;) {
    std::deque<Message>& box = mailboxes_[{source, destination}];
    const auto it = std::find_if(box.begin(), box.end(), [&](const Message& m) { return m.tag == tag; });
    if (it != box.end()) {
      Message message = std::move(*it);
      box.erase(it);
      return message;
    }
    check_abort();
    if (std::chrono::steady_clock::now() > deadline)
      throw CommError("recv from rank " + std::to_string(source) + " timed out after " +
                      std::to_string(timeout_.count()) + " s");
    mail_cv_.wait_for(lock, poll_interval);
  }
}

} // namespace gputwin::engine
