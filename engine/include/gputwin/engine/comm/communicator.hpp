#pragma once
// The communication interface of the engine: the collectives Megatron-style training needs and
// point-to-point messages between pipeline stages. The in-process implementation runs every rank as a
// thread; the NCCL implementation (cuda/nccl_communicator.hpp, one process per GPU) provides the same calls.

#include "gputwin/engine/comm/buffer_ops.hpp"
#include "gputwin/engine/core/dtype.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace gputwin::engine {

// A communication failure: a peer failed or the run was aborted, or a wait timed out.
class CommError : public std::runtime_error {
public:
  explicit CommError(const std::string& message) : std::runtime_error(message) {}
};

class Communicator {
public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0; // this member's index in the group, 0 .. size-1
  virtual int size() const = 0;
  virtual const std::vector<int>& world_ranks() const = 0; // the members' global ranks, in group order
  // Where the collectives' buffers must be: host memory, or one device's memory for a communicator made with
  // that device's operations (InProcessWorld::communicator), or the GPU's memory only (NcclCommunicator).
  virtual bool reaches(Device device) const { return device == Device::Cpu; }
  // Where send/recv's buffers must be: host memory for the in-process communicator (even one whose
  // collectives reach a device), the GPU's memory for NcclCommunicator.
  virtual bool messages_reach(Device device) const { return device == Device::Cpu; }

  // In place over `count` f32 or bf16 elements: the element-wise sum (or max) over the members, accumulated in
  // fp32 in member order and rounded once, so the result does not depend on timing.
  virtual void all_reduce(void* data, int64_t count, DType dtype, ReduceOp op) = 0;
  // out (size x count) = member 0's `count` elements, then member 1's, ...
  virtual void all_gather(const void* in, void* out, int64_t count, DType dtype) = 0;
  // out (count) = the sum over members of their elements [rank x count, (rank + 1) x count) of `in`.
  virtual void reduce_scatter(const void* in, void* out, int64_t count, DType dtype) = 0;
  // Hands `bytes` to group member `peer`; returns at once (buffered). `tag` selects the matching recv;
  // `sequence` is delivered with the message (the tracer's send/recv matching number).
  virtual void send(const void* data, int64_t bytes, int peer, int64_t tag, int64_t sequence) = 0;
  // Waits for the message from `peer` with `tag` and copies it into `data`; returns its sequence number.
  // Throws CommError if its size is not `bytes`.
  virtual int64_t recv(void* data, int64_t bytes, int peer, int64_t tag) = 0;
  virtual void barrier() = 0;
  // All-to-all(-v) (mixture-of-experts token exchange): this member's `in` holds send_bytes[j] bytes for member
  // j, one block after the other in member order; `out` receives recv_bytes[j] bytes from member j the same way
  // (recv_bytes[j] must be what member j sends here). The default goes through send/recv (host memory, tag
  // all_to_all_tag, so it may not interleave with another all-to-all of the same members); InProcessWorld
  // copies directly.
  virtual void all_to_all_v(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                            const std::vector<int64_t>& recv_bytes);
  static constexpr int64_t all_to_all_tag = -0x4d6f45; // reserved: no pipeline message uses a negative tag
};

} // namespace gputwin::engine
