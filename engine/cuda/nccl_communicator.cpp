#include "cuda/nccl_communicator.hpp"

#include "cuda/cuda_check.hpp"

#ifndef GPUTWIN_HAVE_NCCL_HEADER
#error "nccl_communicator.cpp needs nccl.h (CMake builds it only where NCCL was found)"
#endif

#include <algorithm>
#include <cstring>
#include <map>
#include <exception>
#include <thread>

// NCCL_CHECK (cuda_check.hpp) for a call on a non-blocking communicator, which may return ncclInProgress: the
// call was started, and ncclCommGetAsyncError says when it is done (Impl::wait).
#define NCCL_CHECK_STARTED(call)                                                                                       \
  do {                                                                                                                 \
    const ncclResult_t gputwin_nccl_started_ = (call);                                                                 \
    if (gputwin_nccl_started_ != ncclSuccess && gputwin_nccl_started_ != ncclInProgress)                               \
      ::gputwin::engine::throw_nccl_error(gputwin_nccl_started_, #call, __FILE__, __LINE__);                           \
  } while (0)

namespace gputwin::engine {

namespace {

static_assert(sizeof(ncclUniqueId) == std::tuple_size_v<NcclUniqueIdBytes>, "ncclUniqueId is 128 bytes");

ncclDataType_t nccl_type(DType dtype)
{
  if (dtype == DType::F32)
    return ncclFloat32;
  if (dtype == DType::BF16)
    return ncclBfloat16;
  throw CommError("NcclCommunicator: expected f32 or bf16 elements, got " + to_string(dtype));
}

// What travels before every point-to-point message (a separate 32-byte message in the same NCCL group).
struct MessageHeader {
  int64_t magic = 0;
  int64_t tag = 0;
  int64_t bytes = 0;
  int64_t sequence = 0;
};
constexpr int64_t header_magic = 0x32507477696e7067; // "gpwintP2"
constexpr size_t payload_offset = 256;              // the payload after the header, aligned

ncclConfig_t non_blocking_config()
{
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

// Runs a clean-up call whose failure must not hide the error being reported (destructor, abort path).
template <typename Fn>
void quietly(Fn&& fn) noexcept
{
  try {
    fn();
  } catch (...) {
  }
}

} // namespace

NcclUniqueIdBytes nccl_unique_id()
{
  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id));
  NcclUniqueIdBytes bytes{};
  std::memcpy(bytes.data(), &id, sizeof id);
  return bytes;
}

std::string nccl_version()
{
  int code = 0;
  NCCL_CHECK(ncclGetVersion(&code));
  return "NCCL " + std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

struct NcclCommunicator::Impl {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int device = 0;
  int rank = 0, size = 0;
  std::vector<int> world_ranks;
  std::chrono::milliseconds timeout{0};
  BufferOps* producer = nullptr;
  // The communicators split from one world share this: a collective on any of them first posts every
  // communicator's buffered sends, so no rank waits in a collective while holding a message a peer needs.
  std::shared_ptr<std::vector<Impl*>> family;
  float* barrier_value = nullptr;           // device, 1 element
  MessageHeader* received_header = nullptr; // device
  struct PendingSend {
    char* buffer = nullptr; // device: header, then the payload at payload_offset
    int64_t bytes = 0;
    int peer = 0;
  };
  std::vector<PendingSend> pending;
  std::vector<char*> posted; // buffers of sends in flight, freed when the stream is done
  std::map<int, int64_t> received_count;

  std::string where() const
  {
    std::string ranks;
    for (const int r : world_ranks)
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    return "on world ranks [" + ranks + "] (this is member " + std::to_string(rank) + ", GPU " +
           std::to_string(device) + ")";
  }

  void abort_comm() noexcept
  {
    if (comm == nullptr)
      return;
    quietly([&] { NCCL_CHECK_STARTED(ncclCommAbort(comm)); });
    comm = nullptr;
  }

  // Aborts the communicator (peers' waits fail or time out instead of hanging) and throws.
  [[noreturn]] void fail(const std::string& call, const std::string& reason)
  {
    abort_comm();
    throw CommError("NCCL " + call + " failed " + where() + ": " + reason);
  }

  void check_usable(const std::string& call) const
  {
    if (comm == nullptr)
      throw CommError("NCCL " + call + " " + where() + ": the communicator was aborted after an earlier failure");
  }

  // Runs `fn`; any error in it (NCCL_CHECK, CUDA_CHECK, the producer's) aborts the communicator and becomes a
  // CommError naming `call` and the ranks.
  template <typename Fn>
  void guarded(const std::string& call, Fn&& fn)
  {
    check_usable(call);
    try {
      fn();
    } catch (const CommError&) {
      throw;
    } catch (const std::exception& e) {
      fail(call, e.what());
    }
  }

  // Polls until the communicator's pending NCCL call is done and, with `stream_too`, the stream is idle.
  void wait(const std::string& call, bool stream_too)
  {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (int polls = 0;; ++polls) {
      ncclResult_t state = ncclSuccess;
      NCCL_CHECK(ncclCommGetAsyncError(comm, &state));
      if (state != ncclSuccess && state != ncclInProgress)
        {
        const char* detail = ncclGetLastError(comm);
        fail(call, std::string(ncclGetErrorString(state)) + (detail && *detail ? std::string(" (") + detail + ")" : ""));
      }
      if (state == ncclSuccess) {
        if (!stream_too)
          return;
        // Not CUDA_CHECK: cudaErrorNotReady is the expected "still running".
        const cudaError_t done = cudaStreamQuery(stream);
        if (done == cudaSuccess) {
          for (char* buffer : posted)
            CUDA_CHECK(cudaFree(buffer));
          posted.clear();
          return;
        }
        if (done != cudaErrorNotReady)
          fail(call, std::string(cudaGetErrorName(done)) + " (" + cudaGetErrorString(done) + ")");
      }
      if (std::chrono::steady_clock::now() >= deadline)
        fail(call, "not done after " + std::to_string(timeout.count() / 1000) +
                       " s (a peer failed or does not call it; GPUTWIN_RENDEZVOUS_TIMEOUT_S sets the limit)");
      if (polls < 1000)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  void publish_producer()
  {
    if (producer != nullptr)
      producer->publish();
  }

  // Inside an open NCCL group: posts this communicator's buffered sends.
  void post_pending()
  {
    for (const PendingSend& p : pending) {
      NCCL_CHECK_STARTED(ncclSend(p.buffer, sizeof(MessageHeader), ncclInt8, p.peer, comm, stream));
      NCCL_CHECK_STARTED(ncclSend(p.buffer + payload_offset, static_cast<size_t>(p.bytes), ncclInt8, p.peer, comm,
                                  stream));
      posted.push_back(p.buffer);
    }
    pending.clear();
  }

  // Posts and completes the buffered sends of every communicator of the family but `except` (before a
  // collective, or a receive that posts its own communicator's sends in its group).
  void flush_family(const Impl* except = nullptr)
  {
    for (Impl* member : *family)
      if (member != except && !member->pending.empty())
        member->guarded("ncclSend", [&] {
          NCCL_CHECK_STARTED(ncclGroupStart());
          member->post_pending();
          NCCL_CHECK_STARTED(ncclGroupEnd());
          member->wait("ncclSend", true);
        });
  }

  // One collective: buffered sends first, the producer's work done, the call, then its completion.
  template <typename Fn>
  void collective(const std::string& call, Fn&& launch)
  {
    flush_family();
    guarded(call, [&] {
      publish_producer();
      launch();
      wait(call, true);
    });
  }
};

NcclCommunicator::NcclCommunicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl))
{
  impl_->family->push_back(impl_.get());
}

NcclCommunicator::~NcclCommunicator()
{
  Impl& s = *impl_;
  std::erase(*s.family, &s);
  if (s.comm != nullptr) {
    // While an exception unwinds (this rank failed) or after a failure: abort, the peers' waits fail.
    if (std::uncaught_exceptions() > 0) {
      s.abort_comm();
    } else {
      try {
        NCCL_CHECK_STARTED(ncclCommFinalize(s.comm));
        s.wait("ncclCommFinalize", true);
        NCCL_CHECK(ncclCommDestroy(s.comm));
        s.comm = nullptr;
      } catch (...) {
        s.abort_comm();
      }
    }
  }
  for (const Impl::PendingSend& p : s.pending)
    quietly([&] { CUDA_CHECK(cudaFree(p.buffer)); });
  for (char* buffer : s.posted)
    quietly([&] { CUDA_CHECK(cudaFree(buffer)); });
  quietly([&] { CUDA_CHECK(cudaFree(s.barrier_value)); });
  quietly([&] { CUDA_CHECK(cudaFree(s.received_header)); });
  if (s.stream != nullptr)
    quietly([&] { CUDA_CHECK(cudaStreamDestroy(s.stream)); });
}

namespace {
// The stream and small buffers of a new communicator on `device`.
void prepare(NcclCommunicator::Impl& s)
{
  CUDA_CHECK(cudaSetDevice(s.device));
  CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&s.barrier_value), sizeof(float)));
  CUDA_CHECK(cudaMemset(s.barrier_value, 0, sizeof(float)));
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&s.received_header), sizeof(MessageHeader)));
}
} // namespace

std::unique_ptr<NcclCommunicator> NcclCommunicator::create_world(const NcclUniqueIdBytes& id, int world_rank,
                                                                 int world_size, int device,
                                                                 std::chrono::milliseconds timeout,
                                                                 BufferOps* producer)
{
  auto impl = std::make_unique<Impl>();
  impl->device = device;
  impl->rank = world_rank;
  impl->size = world_size;
  for (int r = 0; r < world_size; ++r)
    impl->world_ranks.push_back(r);
  impl->timeout = timeout;
  impl->producer = producer;
  impl->family = std::make_shared<std::vector<Impl*>>();
  Impl& s = *impl;
  std::unique_ptr<NcclCommunicator> result(new NcclCommunicator(std::move(impl)));
  try {
    prepare(s);
    ncclUniqueId unique{};
    std::memcpy(&unique, id.data(), sizeof unique);
    ncclConfig_t config = non_blocking_config();
    NCCL_CHECK_STARTED(ncclCommInitRankConfig(&s.comm, world_size, unique, world_rank, &config));
  } catch (const std::exception& e) {
    s.fail("ncclCommInitRankConfig", e.what());
  }
  s.guarded("ncclCommInitRankConfig", [&] { s.wait("ncclCommInitRankConfig", false); });
  return result;
}

std::unique_ptr<NcclCommunicator> NcclCommunicator::split(int color, const std::vector<int>& members)
{
  Impl& s = *impl_;
  int key = 0;
  if (color >= 0) {
    const auto me = std::find(members.begin(), members.end(), s.world_ranks[static_cast<size_t>(s.rank)]);
    if (me == members.end())
      throw std::logic_error("NcclCommunicator::split: this rank is not among the members of color " +
                             std::to_string(color));
    key = static_cast<int>(me - members.begin());
  }
  s.flush_family();
  auto impl = std::make_unique<Impl>();
  impl->device = s.device;
  impl->rank = key;
  impl->size = static_cast<int>(members.size());
  impl->world_ranks = members;
  impl->timeout = s.timeout;
  impl->producer = s.producer;
  impl->family = s.family;
  ncclComm_t child = nullptr;
  s.guarded("ncclCommSplit", [&] {
    ncclConfig_t config = non_blocking_config();
    NCCL_CHECK_STARTED(ncclCommSplit(s.comm, color >= 0 ? color : NCCL_SPLIT_NOCOLOR, key, &child, &config));
    s.wait("ncclCommSplit", false); // the parent is busy until the split is done
  });
  if (color < 0)
    return nullptr;
  impl->comm = child;
  Impl& c = *impl;
  std::unique_ptr<NcclCommunicator> result(new NcclCommunicator(std::move(impl)));
  c.guarded("ncclCommSplit", [&] {
    prepare(c);
    c.wait("ncclCommSplit", false);
  });
  return result;
}

int NcclCommunicator::rank() const { return impl_->rank; }
int NcclCommunicator::size() const { return impl_->size; }
const std::vector<int>& NcclCommunicator::world_ranks() const { return impl_->world_ranks; }

void NcclCommunicator::all_reduce(void* data, int64_t count, DType dtype, ReduceOp op)
{
  Impl& s = *impl_;
  const ncclDataType_t type = nccl_type(dtype);
  s.collective("ncclAllReduce", [&] {
    NCCL_CHECK_STARTED(ncclAllReduce(data, data, static_cast<size_t>(count), type,
                                     op == ReduceOp::Sum ? ncclSum : ncclMax, s.comm, s.stream));
  });
}

void NcclCommunicator::all_gather(const void* in, void* out, int64_t count, DType dtype)
{
  Impl& s = *impl_;
  const ncclDataType_t type = nccl_type(dtype);
  s.collective("ncclAllGather", [&] {
    NCCL_CHECK_STARTED(ncclAllGather(in, out, static_cast<size_t>(count), type, s.comm, s.stream));
  });
}

void NcclCommunicator::reduce_scatter(const void* in, void* out, int64_t count, DType dtype)
{
  Impl& s = *impl_;
  const ncclDataType_t type = nccl_type(dtype);
  s.collective("ncclReduceScatter", [&] {
    NCCL_CHECK_STARTED(ncclReduceScatter(in, out, static_cast<size_t>(count), type, ncclSum, s.comm, s.stream));
  });
}

void NcclCommunicator::send(const void* data, int64_t bytes, int peer, int64_t tag, int64_t sequence)
{
  Impl& s = *impl_;
  if (peer < 0 || peer >= s.size)
    throw CommError("NCCL send " + s.where() + ": peer " + std::to_string(peer) + " is not a member (expected 0.." +
                    std::to_string(s.size - 1) + ")");
  s.guarded("ncclSend", [&] {
    s.publish_producer(); // `data` holds its value before it is copied
    Impl::PendingSend p;
    p.bytes = bytes;
    p.peer = peer;
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p.buffer), payload_offset + static_cast<size_t>(bytes)));
    s.pending.push_back(p);
    const MessageHeader header{header_magic, tag, bytes, sequence};
    CUDA_CHECK(cudaMemcpyAsync(p.buffer, &header, sizeof header, cudaMemcpyHostToDevice, s.stream));
    CUDA_CHECK(cudaMemcpyAsync(p.buffer + payload_offset, data, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice,
                               s.stream));
    // The caller may free `data` once send returns (stream-ordered on the backend's stream, which knows nothing
    // of this one): the copy must be done.
    s.wait("ncclSend (copy to the send buffer)", true);
  });
}

int64_t NcclCommunicator::recv(void* data, int64_t bytes, int peer, int64_t tag)
{
  Impl& s = *impl_;
  if (peer < 0 || peer >= s.size)
    throw CommError("NCCL recv " + s.where() + ": peer " + std::to_string(peer) + " is not a member (expected 0.." +
                    std::to_string(s.size - 1) + ")");
  s.flush_family(&s); // another communicator's buffered sends go first; this one's join the receive's group
  MessageHeader header;
  s.guarded("ncclRecv", [&] {
    s.publish_producer(); // `data` was allocated and zero-filled on the backend's stream: done before NCCL writes
    NCCL_CHECK_STARTED(ncclGroupStart());
    s.post_pending();
    NCCL_CHECK_STARTED(ncclRecv(s.received_header, sizeof(MessageHeader), ncclInt8, peer, s.comm, s.stream));
    NCCL_CHECK_STARTED(ncclRecv(data, static_cast<size_t>(bytes), ncclInt8, peer, s.comm, s.stream));
    NCCL_CHECK_STARTED(ncclGroupEnd());
    s.wait("ncclRecv", true);
    CUDA_CHECK(cudaMemcpy(&header, s.received_header, sizeof header, cudaMemcpyDeviceToHost));
  });
  const int64_t index = s.received_count[peer]++;
  if (header.magic != header_magic || header.tag != tag || header.bytes != bytes)
    s.fail("ncclRecv", "message " + std::to_string(index) + " from member " + std::to_string(peer) + " has tag " +
                           std::to_string(header.tag) + " and " + std::to_string(header.bytes) +
                           " bytes; expected tag " + std::to_string(tag) + " and " + std::to_string(bytes) +
                           " bytes (the ranks disagree on the pipeline schedule)");
  return header.sequence;
}

void NcclCommunicator::barrier()
{
  Impl& s = *impl_;
  s.collective("ncclAllReduce (barrier)", [&] {
    NCCL_CHECK_STARTED(ncclAllReduce(s.barrier_value, s.barrier_value, 1, ncclFloat32, ncclSum, s.comm, s.stream));
  });
}

} // namespace gputwin::engine
