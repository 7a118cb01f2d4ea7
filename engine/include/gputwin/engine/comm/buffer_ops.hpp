#pragma once
// How an in-process communicator moves and reduces its members' buffers when they are not host memory: a
// backend's device copies and reduction kernel (CudaBackend::buffer_ops(); all ranks' buffers on one GPU).
// Without it (the CPU backend) the communicator reads and writes host memory itself.

#include "gputwin/engine/core/dtype.hpp"

#include <cstdint>
#include <vector>

namespace gputwin::engine {

enum class ReduceOp { Sum, Max };

class BufferOps {
public:
  virtual ~BufferOps() = default;
  // The device whose buffers these operations reach.
  virtual Device device() const = 0;
  // Waits until this member's buffers hold their values (its pending work is done): before peers read them.
  virtual void publish() = 0;
  // dst = src, `bytes` bytes (src may be another member's buffer). Asynchronous until complete().
  virtual void copy(void* dst, const void* src, int64_t bytes) = 0;
  // dst[i] = src[0][offset + i] op src[1][offset + i] op ... for i < count, accumulated in fp32 in member order
  // and rounded once to dtype (f32 or bf16), as the host reduction does. Asynchronous until complete().
  virtual void reduce(void* dst, const std::vector<const void*>& src, int64_t offset, int64_t count, DType dtype,
                      ReduceOp op) = 0;
  // A buffer of at least `bytes` on device(), this member's own, reused by the next call.
  virtual void* scratch(int64_t bytes) = 0;
  // Waits until this member's copies and reductions are done: before peers may reuse the buffers it read.
  virtual void complete() = 0;
};

} // namespace gputwin::engine
