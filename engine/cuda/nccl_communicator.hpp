#pragma once
// The Communicator over NCCL: one process per GPU (launched by `gputwin-engine launch` or `mpirun`), the
// collectives and point-to-point messages of one group of ranks on device memory. Plain C++ header (NCCL and
// CUDA types stay in nccl_communicator.cpp); built only where CMake found NCCL (GPUTWIN_HAVE_NCCL).
//
// Every call waits for its work before returning: it polls ncclCommGetAsyncError and cudaStreamQuery on the
// communicator's own stream until done, and after an NCCL or CUDA error, or when `timeout` passes (a peer died
// or never called it), it calls ncclCommAbort and throws CommError naming the call, the error and the group's
// ranks, so a failed peer never hangs a rank. Before each call the producer's (the backend's) pending work is
// waited for (BufferOps::publish), so NCCL reads finished buffers; since each call returns only when done, the
// backend's later work sees its results. (Ordering by CUDA events instead of host waits needs the backend's
// stream: a follow-up.)
//
// Numerics: NCCL chooses its own reduction order (ring or tree, by message size and topology) and reduces
// bf16 in bf16 steps, so results are NOT bit-identical to the in-process communicator's fp32 member-order sums
// (InProcessWorld); multi-process runs match the threaded run to rounding only.
//
// Point to point: send() is buffered as the interface requires: it copies the message (and a small header
// with its tag, size and sequence number) into device memory owned by the communicator and posts it with the
// next recv() in one NCCL group (Megatron's batched send/recv), so two stages that send to each other before
// receiving cannot deadlock; a collective (or barrier) on any communicator split from the same world posts
// and completes the buffered sends first, so no rank waits in a collective holding a message a peer needs. NCCL keeps the messages between a pair of ranks in order; recv()
// checks the header against the tag and size it expects and throws CommError on a mismatch, and returns the
// sender's sequence number from it.

#include "gputwin/engine/comm/communicator.hpp"

#include <array>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace gputwin::engine {

// An ncclUniqueId as bytes (NCCL_UNIQUE_ID_BYTES = 128): what rank 0 publishes in the rendezvous directory.
using NcclUniqueIdBytes = std::array<char, 128>;

// A fresh ncclUniqueId (ncclGetUniqueId), made by rank 0 before the world communicator.
NcclUniqueIdBytes nccl_unique_id();
// "NCCL 2.28.3" (ncclGetVersion).
std::string nccl_version();

class NcclCommunicator : public Communicator {
public:
  // The world communicator: every one of `world_size` processes calls it with the same id and its own
  // `world_rank`, on GPU `device`. Non-blocking ncclCommInitRankConfig, polled until connected; CommError
  // after `timeout`. `producer` (may be null): the backend's buffer operations, whose publish() is waited for
  // before every call (it must outlive the communicator).
  static std::unique_ptr<NcclCommunicator> create_world(const NcclUniqueIdBytes& id, int world_rank, int world_size,
                                                        int device, std::chrono::milliseconds timeout,
                                                        BufferOps* producer);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  // A communicator over group `members` (world ranks, in group order, this rank among them) made with
  // ncclCommSplit: every member of this communicator calls split the same number of times in the same order,
  // each with its group's `color` (>= 0, the same for all of one group's members), or with color -1 and no
  // members where it belongs to none of the groups being made (NCCL_SPLIT_NOCOLOR); returns null then.
  std::unique_ptr<NcclCommunicator> split(int color, const std::vector<int>& members);

  int rank() const override;
  int size() const override;
  const std::vector<int>& world_ranks() const override;
  // Device memory of this process's GPU only, for collectives and messages alike.
  bool reaches(Device device) const override { return device == Device::Cuda; }
  bool messages_reach(Device device) const override { return device == Device::Cuda; }

  // As Communicator's, except the reduction order (NCCL's, see above).
  void all_reduce(void* data, int64_t count, DType dtype, ReduceOp op) override;
  void all_gather(const void* in, void* out, int64_t count, DType dtype) override;
  void reduce_scatter(const void* in, void* out, int64_t count, DType dtype) override;
  void send(const void* data, int64_t bytes, int peer, int64_t tag, int64_t sequence) override;
  int64_t recv(void* data, int64_t bytes, int peer, int64_t tag) override;
  // Posts the buffered sends, then an all-reduce of one value over the group.
  void barrier() override;

  struct Impl;

private:
  explicit NcclCommunicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace gputwin::engine
