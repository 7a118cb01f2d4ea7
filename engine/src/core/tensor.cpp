#include "gputwin/engine/core/tensor.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>
#include <utility>

namespace gputwin::engine {

namespace {
constexpr std::align_val_t tensor_alignment{64}; // a cache line, so packed GEMM panels start aligned

int64_t product(const std::vector<int64_t>& shape)
{
  int64_t n = 1;
  for (const int64_t d : shape) {
    if (d < 0)
      throw std::invalid_argument("Tensor: negative dimension");
    n *= d;
  }
  return n;
}
} // namespace

Tensor::Tensor(MemoryAccountant& memory, MemoryPurpose purpose, DType dtype, std::vector<int64_t> shape, Device device)
    : memory_(&memory), purpose_(purpose), dtype_(dtype), device_(device), shape_(std::move(shape)),
      numel_(product(shape_))
{
  if (device_ != Device::Cpu)
    throw std::runtime_error("Tensor: no " + to_string(device_) +
                             " memory without an allocator (pass the backend's DeviceAllocator)");
  const size_t size = static_cast<size_t>(std::max<int64_t>(bytes(), 1));
  data_ = ::operator new(size, tensor_alignment);
  std::memset(data_, 0, size);
  memory_->allocate(purpose_, bytes());
}

Tensor::Tensor(MemoryAccountant& memory, MemoryPurpose purpose, DType dtype, std::vector<int64_t> shape,
               DeviceAllocator* allocator)
    : memory_(&memory), allocator_(allocator), purpose_(purpose), dtype_(dtype),
      device_(allocator != nullptr ? allocator->device() : Device::Cpu), shape_(std::move(shape)),
      numel_(product(shape_))
{
  const size_t size = static_cast<size_t>(std::max<int64_t>(bytes(), 1));
  if (allocator_ != nullptr) {
    data_ = allocator_->allocate(size); // zero-filled on the device
  } else {
    data_ = ::operator new(size, tensor_alignment);
    std::memset(data_, 0, size);
  }
  memory_->allocate(purpose_, bytes());
}

Tensor::Tensor(Tensor&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), memory_(std::exchange(other.memory_, nullptr)),
      allocator_(std::exchange(other.allocator_, nullptr)), purpose_(other.purpose_), dtype_(other.dtype_),
      device_(other.device_), shape_(std::move(other.shape_)), numel_(std::exchange(other.numel_, 0))
{
}

Tensor& Tensor::operator=(Tensor&& other) noexcept
{
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    memory_ = std::exchange(other.memory_, nullptr);
    allocator_ = std::exchange(other.allocator_, nullptr);
    purpose_ = other.purpose_;
    dtype_ = other.dtype_;
    device_ = other.device_;
    shape_ = std::move(other.shape_);
    numel_ = std::exchange(other.numel_, 0);
  }
  return *this;
}

Tensor::~Tensor()
{
  reset();
}

void Tensor::reset()
{
  if (memory_ != nullptr && data_ != nullptr) {
    memory_->release(purpose_, bytes());
    if (allocator_ != nullptr)
      allocator_->deallocate(data_);
    else
      ::operator delete(data_, tensor_alignment);
  }
  data_ = nullptr;
  memory_ = nullptr;
  allocator_ = nullptr;
  shape_.clear();
  numel_ = 0;
}

Tensor Tensor::view(int64_t offset, std::vector<int64_t> shape) const
{
  Tensor v;
  v.numel_ = product(shape);
  if (offset < 0 || offset + v.numel_ > numel_)
    throw std::out_of_range("Tensor::view: elements [" + std::to_string(offset) + ", " +
                            std::to_string(offset + v.numel_) + ") outside " + describe());
  v.data_ = static_cast<char*>(data_) + offset * dtype_bytes(dtype_);
  v.purpose_ = purpose_;
  v.dtype_ = dtype_;
  v.device_ = device_;
  v.shape_ = std::move(shape);
  return v;
}

void Tensor::retag(MemoryPurpose purpose)
{
  if (memory_ == nullptr)
    throw std::logic_error("Tensor::retag: only an owning tensor is counted");
  memory_->release(purpose_, bytes());
  purpose_ = purpose;
  memory_->allocate(purpose_, bytes());
}

std::string Tensor::describe() const
{
  std::string text = to_string(dtype_) + " (";
  for (size_t i = 0; i < shape_.size(); ++i) {
    if (i)
      text += ", ";
    text += std::to_string(shape_[i]);
  }
  return text + ")";
}

void Tensor::check_host_access(DType expected) const
{
  if (device_ != Device::Cpu)
    throw std::logic_error("Tensor: host access to " + to_string(device_) + " tensor " + describe() +
                           " (copy it with Backend::download / upload)");
  if (dtype_ != expected)
    throw std::logic_error("Tensor: accessed " + describe() + " as " + to_string(expected));
}

} // namespace gputwin::engine
