#pragma once
// A dense row-major tensor with an explicit element type and device. An owning tensor's bytes are counted
// by the rank's MemoryAccountant under a purpose for as long as it lives; a view borrows a range of another
// tensor's elements and counts nothing.
//
// Device tensors come from a backend's DeviceAllocator (RankContext::tensor passes Backend::allocator()); views
// of them are pointer arithmetic on the device address. Their bytes cannot be dereferenced on the host:
// f32(), bf16(), u8(), i32() and load_float() throw for them, and host code copies through Backend::upload /
// download (backend/host_access.hpp).

#include "gputwin/engine/core/device_allocator.hpp"
#include "gputwin/engine/core/dtype.hpp"
#include "gputwin/engine/core/memory_accountant.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gputwin::engine {

class Tensor {
public:
  Tensor() = default;
  // Zero-filled storage for the product of `shape` elements of `dtype`, counted under `purpose`.
  // Host memory only: throws std::runtime_error for another device (use the allocator constructor).
  Tensor(MemoryAccountant& memory, MemoryPurpose purpose, DType dtype, std::vector<int64_t> shape,
         Device device = Device::Cpu);
  // The same on `allocator`'s device (zero-filled there), or in host memory when `allocator` is null. The
  // allocator must outlive the tensor.
  Tensor(MemoryAccountant& memory, MemoryPurpose purpose, DType dtype, std::vector<int64_t> shape,
         DeviceAllocator* allocator);
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor();

  // `shape`'s elements starting at element `offset` of this tensor, without copying or counting. The view
  // must not outlive this tensor. REQUIRES: offset + product(shape) <= numel().
  Tensor view(int64_t offset, std::vector<int64_t> shape) const;
  // Moves this tensor's bytes to another purpose (an activation that backward will need becomes saved).
  void retag(MemoryPurpose purpose);
  // Frees the storage now (an empty tensor afterwards).
  void reset();

  bool defined() const { return data_ != nullptr; }
  bool owning() const { return memory_ != nullptr; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  MemoryPurpose purpose() const { return purpose_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t dim(size_t i) const { return shape_.at(i); }
  int64_t numel() const { return numel_; }
  int64_t bytes() const { return numel_ * dtype_bytes(dtype_); }
  std::string describe() const; // "bf16 (16, 2, 64)"

  // The address of the first element on device() (a device pointer for a device tensor).
  void* raw() const { return data_; }
  // Host pointers: only for host tensors (throws std::logic_error for a device tensor).
  float* f32() const { return typed<float>(DType::F32); }
  uint16_t* bf16() const { return typed<uint16_t>(DType::BF16); }
  uint8_t* u8() const { return typed<uint8_t>(DType::U8); }
  int32_t* i32() const { return typed<int32_t>(DType::I32); }

private:
  template <typename T>
  T* typed(DType expected) const
  {
    check_host_access(expected);
    return static_cast<T*>(data_);
  }
  void check_host_access(DType expected) const;

  void* data_ = nullptr;
  MemoryAccountant* memory_ = nullptr;   // null for views and empty tensors
  DeviceAllocator* allocator_ = nullptr; // owner of data_ when it is device memory; null for host memory
  MemoryPurpose purpose_ = MemoryPurpose::Workspace;
  DType dtype_ = DType::F32;
  Device device_ = Device::Cpu;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
};

// Element `i` of a float or bf16 tensor as fp32.
inline float load_float(const Tensor& t, int64_t i)
{
  return t.dtype() == DType::F32 ? t.f32()[i] : bf16_to_float(t.bf16()[i]);
}

} // namespace gputwin::engine
