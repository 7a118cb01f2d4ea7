#include "gputwin/engine/core/memory_accountant.hpp"

#include "gputwin/engine/core/dtype.hpp"

#include <algorithm>
#include <stdexcept>

namespace gputwin::engine {

std::string to_string(DType t)
{
  switch (t) {
  case DType::F32: return "f32";
  case DType::BF16: return "bf16";
  case DType::U8: return "u8";
  case DType::I32: return "i32";
  }
  return "?";
}

std::string to_string(Device d)
{
  return d == Device::Cpu ? "cpu" : "cuda";
}

std::string to_string(MemoryPurpose p)
{
  switch (p) {
  case MemoryPurpose::Weights: return "weights";
  case MemoryPurpose::Gradients: return "gradients";
  case MemoryPurpose::Optimizer: return "optimizer";
  case MemoryPurpose::LayerActivations: return "layer activations";
  case MemoryPurpose::EdgeActivations: return "edge activations";
  case MemoryPurpose::Workspace: return "workspace";
  }
  return "?";
}

void MemoryAccountant::allocate(MemoryPurpose purpose, int64_t bytes)
{
  const size_t i = index(purpose);
  current_[i] += bytes;
  peak_[i] = std::max(peak_[i], current_[i]);
  total_ += bytes;
  total_peak_ = std::max(total_peak_, total_);
}

void MemoryAccountant::release(MemoryPurpose purpose, int64_t bytes)
{
  const size_t i = index(purpose);
  if (current_[i] < bytes)
    throw std::logic_error("MemoryAccountant: releasing more " + to_string(purpose) + " bytes than allocated");
  current_[i] -= bytes;
  total_ -= bytes;
}

void MemoryAccountant::reset_peaks()
{
  peak_ = current_;
  total_peak_ = total_;
}

} // namespace gputwin::engine
