// TcpWorld and its communicators: collectives as all-to-all exchanges of the members' buffers, reduced in
// member order like InProcessWorld (bit-identical results), and tagged point-to-point messages.
#include "gputwin/engine/comm/tcp_world.hpp"

#include "gputwin/engine/comm/member_reduction.hpp"
#include "tcp_transport.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace gputwin::engine {

namespace {

// Which collective a member is in: members that disagree are a program error, reported instead of mixing data.
enum class Collective : int64_t { AllReduceSum = 1, AllReduceMax, AllGather, ReduceScatter, Barrier };

const char* name_of(int64_t collective)
{
  switch (static_cast<Collective>(collective)) {
  case Collective::AllReduceSum: return "all_reduce(sum)";
  case Collective::AllReduceMax: return "all_reduce(max)";
  case Collective::AllGather: return "all_gather";
  case Collective::ReduceScatter: return "reduce_scatter";
  case Collective::Barrier: return "barrier";
  }
  return "an unknown collective";
}

// The group's identity on the wire: FNV-1a over its members, the same in every process.
uint64_t group_id(const std::vector<int>& ranks)
{
  uint64_t h = 1469598103934665603ull;
  for (const int r : ranks) {
    h ^= static_cast<uint64_t>(static_cast<uint32_t>(r)) + 0x9e3779b97f4a7c15ull;
    h *= 1099511628211ull;
  }
  return h ^ ranks.size();
}

class TcpCommunicator final : public Communicator {
public:
  TcpCommunicator(std::shared_ptr<tcp::Transport> transport, std::vector<int> ranks, int index)
      : transport_(std::move(transport)), ranks_(std::move(ranks)), index_(index), group_(group_id(ranks_))
  {
    label_ = "ranks ";
    for (size_t i = 0; i < ranks_.size(); ++i) {
      if (i > 0)
        label_ += ',';
      label_ += std::to_string(ranks_[i]);
    }
  }

  int rank() const override { return index_; }
  int size() const override { return static_cast<int>(ranks_.size()); }
  const std::vector<int>& world_ranks() const override { return ranks_; }

  void all_reduce(void* data, int64_t count, DType dtype, ReduceOp op) override
  {
    require_float_type(dtype, "all_reduce");
    const int64_t bytes = count * dtype_bytes(dtype);
    const Collective kind = op == ReduceOp::Sum ? Collective::AllReduceSum : Collective::AllReduceMax;
    const std::vector<std::vector<char>> theirs =
        exchange(kind, [&](int) { return std::make_pair(static_cast<const void*>(data), bytes); });
    const std::vector<const void*> inputs = pointers(theirs, data);
    store_elements(data, dtype, reduce_members(inputs, 0, count, dtype, op)); // every input read, then written
  }

  void all_gather(const void* in, void* out, int64_t count, DType dtype) override
  {
    const int64_t bytes = count * dtype_bytes(dtype);
    const std::vector<std::vector<char>> theirs =
        exchange(Collective::AllGather, [&](int) { return std::make_pair(in, bytes); });
    const std::vector<const void*> inputs = pointers(theirs, in);
    for (size_t r = 0; r < inputs.size(); ++r)
      std::memmove(static_cast<char*>(out) + static_cast<int64_t>(r) * bytes, inputs[r], static_cast<size_t>(bytes));
  }

  void reduce_scatter(const void* in, void* out, int64_t count, DType dtype) override
  {
    require_float_type(dtype, "reduce_scatter");
    const int64_t bytes = count * dtype_bytes(dtype);
    // Member j needs only elements [j x count, (j + 1) x count) of each member's input.
    const std::vector<std::vector<char>> theirs = exchange(Collective::ReduceScatter, [&](int member) {
      return std::make_pair(static_cast<const void*>(static_cast<const char*>(in) + member * bytes), bytes);
    });
    const std::vector<const void*> inputs =
        pointers(theirs, static_cast<const char*>(in) + static_cast<int64_t>(index_) * bytes);
    store_elements(out, dtype, reduce_members(inputs, 0, count, dtype, ReduceOp::Sum));
  }

  void send(const void* data, int64_t bytes, int peer, int64_t tag, int64_t sequence) override
  {
    const int destination = member(peer, "send");
    tcp::Header h;
    h.kind = static_cast<uint32_t>(tcp::Kind::PointToPoint);
    h.group = group_;
    h.tag = tag;
    h.sequence = sequence;
    auto payload = std::make_shared<const std::vector<char>>(static_cast<const char*>(data),
                                                             static_cast<const char*>(data) + bytes);
    transport_->post(destination, h, std::move(payload),
                     "send to rank " + std::to_string(destination) + " (tag " + std::to_string(tag) + ")");
  }

  int64_t recv(void* data, int64_t bytes, int peer, int64_t tag) override
  {
    const int source = member(peer, "recv");
    const std::string call = "recv from rank " + std::to_string(source) + " (tag " + std::to_string(tag) + ")";
    const uint64_t group = group_;
    const tcp::Message m = transport_->take(
        source,
        [group, tag](const tcp::Header& h) {
          return h.kind == static_cast<uint32_t>(tcp::Kind::PointToPoint) && h.group == group && h.tag == tag;
        },
        call);
    if (static_cast<int64_t>(m.data.size()) != bytes)
      throw CommError(call + ": expected " + std::to_string(bytes) + " bytes, got " + std::to_string(m.data.size()));
    std::memcpy(data, m.data.data(), static_cast<size_t>(bytes));
    return m.header.sequence;
  }

  void barrier() override
  {
    exchange(Collective::Barrier, [](int) { return std::make_pair(static_cast<const void*>(nullptr), int64_t{0}); });
  }

private:
  int member(int peer, const char* op) const
  {
    if (peer < 0 || peer >= size())
      throw CommError(std::string(op) + ": peer " + std::to_string(peer) + " is not a member of the group of " +
                      label_ + " (expected 0.." + std::to_string(size() - 1) + ")");
    return ranks_[static_cast<size_t>(peer)];
  }

  // Sends each other member j the bytes part(j) names and returns what every member sent this one (by member;
  // this member's own entry empty). Checks that every member is in the same collective with the right size.
  template <typename Part>
  std::vector<std::vector<char>> exchange(Collective kind, Part&& part)
  {
    const int64_t number = collectives_++;
    const std::string call = std::string(name_of(static_cast<int64_t>(kind))) + " over " + label_;
    tcp::Header h;
    h.kind = static_cast<uint32_t>(tcp::Kind::Collective);
    h.group = group_;
    h.tag = static_cast<int64_t>(kind);
    h.sequence = number;
    int64_t expected = 0;
    for (int j = 0; j < size(); ++j) {
      const auto [data, bytes] = part(j);
      if (j == index_) {
        expected = bytes;
        continue;
      }
      const char* begin = static_cast<const char*>(data);
      transport_->post(ranks_[static_cast<size_t>(j)], h,
                       std::make_shared<const std::vector<char>>(begin, begin + bytes), call);
    }
    std::vector<std::vector<char>> received(ranks_.size());
    const uint64_t group = group_;
    for (int j = 0; j < size(); ++j) {
      if (j == index_)
        continue;
      const int source = ranks_[static_cast<size_t>(j)];
      tcp::Message m = transport_->take(
          source,
          [group](const tcp::Header& theirs) {
            return theirs.kind == static_cast<uint32_t>(tcp::Kind::Collective) && theirs.group == group;
          },
          call);
      if (m.header.sequence != number || m.header.tag != h.tag)
        throw CommError(call + ": rank " + std::to_string(source) + " is in collective #" +
                        std::to_string(m.header.sequence) + " (" + name_of(m.header.tag) +
                        ") of the group, this rank in #" + std::to_string(number) +
                        " (expected every member to make the same calls in the same order)");
      if (static_cast<int64_t>(m.data.size()) != expected)
        throw CommError(call + ": rank " + std::to_string(source) + " sent " + std::to_string(m.data.size()) +
                        " bytes, this rank expected " + std::to_string(expected) + " (the members' counts differ)");
      received[static_cast<size_t>(j)] = std::move(m.data);
    }
    return received;
  }

  // The members' inputs in member order: the received buffers, and `mine` for this member.
  std::vector<const void*> pointers(const std::vector<std::vector<char>>& received, const void* mine) const
  {
    std::vector<const void*> inputs(received.size());
    for (size_t r = 0; r < received.size(); ++r)
      inputs[r] = static_cast<int>(r) == index_ ? mine : received[r].data();
    return inputs;
  }

  std::shared_ptr<tcp::Transport> transport_;
  std::vector<int> ranks_;
  int index_;
  uint64_t group_;
  std::string label_;
  int64_t collectives_ = 0;
};

} // namespace

std::string tcp_host_from_environment()
{
  const char* host = std::getenv("GPUTWIN_TCP_HOST");
  return host != nullptr && *host != '\0' ? host : "127.0.0.1";
}

TcpWorld::TcpWorld(int rank, int world_size, const FileRendezvous& rendezvous, std::chrono::milliseconds timeout,
                   const std::string& host)
{
  if (world_size < 1 || rank < 0 || rank >= world_size)
    throw std::invalid_argument("TcpWorld: expected 0 <= rank < world size, got rank " + std::to_string(rank) + " of " +
                                std::to_string(world_size));
  transport_ =
      std::make_shared<tcp::Transport>(rank, tcp::connect_mesh(rank, world_size, host, rendezvous, timeout), timeout);
}

TcpWorld::~TcpWorld()
{
  transport_->abort(); // communicators that outlive the world throw instead of waiting
}

int TcpWorld::rank() const
{
  return transport_->rank();
}
int TcpWorld::size() const
{
  return transport_->size();
}

std::unique_ptr<Communicator> TcpWorld::communicator(const std::vector<int>& world_ranks)
{
  const auto me = std::find(world_ranks.begin(), world_ranks.end(), rank());
  if (me == world_ranks.end())
    throw std::invalid_argument("TcpWorld::communicator: rank " + std::to_string(rank()) +
                                " is not a member of the group");
  for (const int r : world_ranks)
    if (r < 0 || r >= size())
      throw std::invalid_argument("TcpWorld::communicator: rank " + std::to_string(r) + " outside the world");
  return std::make_unique<TcpCommunicator>(transport_, world_ranks, static_cast<int>(me - world_ranks.begin()));
}

void TcpWorld::close()
{
  transport_->close();
}

} // namespace gputwin::engine
