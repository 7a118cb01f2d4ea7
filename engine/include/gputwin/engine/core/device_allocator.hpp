#pragma once
// Where a backend's tensors live: Tensor asks the backend's allocator for device memory (Backend::allocator(),
// null for host memory). Core knows only this interface; the CUDA allocator (stream-ordered cudaMallocAsync,
// zero-filled with cudaMemsetAsync) lives in engine/cuda/, so core builds without CUDA.

#include "gputwin/engine/core/dtype.hpp"

#include <cstddef>

namespace gputwin::engine {

class DeviceAllocator {
public:
  virtual ~DeviceAllocator() = default;
  // The device its memory is on (never Device::Cpu: host tensors use Tensor's own allocation).
  virtual Device device() const = 0;
  // `bytes` (>= 1) zero-filled bytes on device(), ready for the backend's next op. Throws on failure.
  virtual void* allocate(size_t bytes) = 0;
  // Returns memory from allocate() once the backend's ops launched so far are done with it. Must not throw.
  virtual void deallocate(void* p) noexcept = 0;
};

} // namespace gputwin::engine
