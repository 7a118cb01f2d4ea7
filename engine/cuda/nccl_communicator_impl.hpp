#pragma once
// Internal to the NCCL communicator (nccl_communicator.cpp: creation and collectives; nccl_messages.cpp:
// point-to-point messages): the state of one communicator, its waits, and its error handling.
#include "cuda/cuda_check.hpp"
#include "cuda/nccl_communicator.hpp"

#ifndef GPUTWIN_HAVE_NCCL_HEADER
#error "the NCCL communicator needs nccl.h (CMake builds it only where NCCL was found)"
#endif

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

// NCCL_CHECK (cuda_check.hpp) for a call on a non-blocking communicator, which may return ncclInProgress: the
// call was started, and ncclCommGetAsyncError says when it is done (Impl::wait).
#define NCCL_CHECK_STARTED(call)                                                                                       \
  do {                                                                                                                 \
    const ncclResult_t gputwin_nccl_started_ = (call);                                                                 \
    if (gputwin_nccl_started_ != ncclSuccess && gputwin_nccl_started_ != ncclInProgress)                               \
      ::gputwin::engine::throw_nccl_error(gputwin_nccl_started_, #call, __FILE__, __LINE__);                           \
  } while (0)

namespace gputwin::engine {

// Helpers of the two files (this header is included by them only).

static_assert(sizeof(ncclUniqueId) == std::tuple_size_v<NcclUniqueIdBytes>, "ncclUniqueId is 128 bytes");

inline ncclDataType_t nccl_type(DType dtype)
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
inline constexpr int64_t header_magic = 0x32507477696e7067; // "gpwintP2"
inline constexpr size_t payload_offset = 256;               // the payload after the header, aligned

inline ncclConfig_t non_blocking_config()
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
      if (state != ncclSuccess && state != ncclInProgress) {
        const char* detail = ncclGetLastError(comm);
        fail(call,
             std::string(ncclGetErrorString(state)) + (detail && *detail ? std::string(" (") + detail + ")" : ""));
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
      NCCL_CHECK_STARTED(
          ncclSend(p.buffer + payload_offset, static_cast<size_t>(p.bytes), ncclInt8, p.peer, comm, stream));
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

} // namespace gputwin::engine
