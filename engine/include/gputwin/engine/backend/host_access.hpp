#pragma once
// Typed host copies of tensor data through a backend (Backend::upload/download): how code outside the
// backends reads and writes tensors, wherever they live.

#include "gputwin/engine/backend/backend.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace gputwin::engine {

namespace detail {
inline void check_element_size(const Tensor& t, size_t element_bytes, size_t count, const char* what)
{
  if (static_cast<int64_t>(element_bytes) != dtype_bytes(t.dtype()) || static_cast<int64_t>(count) > t.numel())
    throw std::logic_error(std::string(what) + ": " + std::to_string(count) + " elements of " +
                           std::to_string(element_bytes) + " bytes do not fit " + t.describe());
}
} // namespace detail

// The first `count` elements of `t` (all of them when count < 0), as stored (T of dtype's size).
template <typename T>
std::vector<T> download(Backend& backend, const Tensor& t, int64_t count = -1)
{
  std::vector<T> values(static_cast<size_t>(count < 0 ? t.numel() : count));
  detail::check_element_size(t, sizeof(T), values.size(), "download");
  backend.download(values.data(), t, static_cast<int64_t>(values.size() * sizeof(T)));
  return values;
}

// The first `count` elements of an f32 or bf16 tensor as fp32.
inline std::vector<float> download_floats(Backend& backend, const Tensor& t, int64_t count = -1)
{
  if (t.dtype() == DType::F32)
    return download<float>(backend, t, count);
  if (t.dtype() != DType::BF16)
    throw std::logic_error("download_floats: " + t.describe() + " is not f32 or bf16");
  const std::vector<uint16_t> bits = download<uint16_t>(backend, t, count);
  std::vector<float> values(bits.size());
  for (size_t i = 0; i < bits.size(); ++i)
    values[i] = bf16_to_float(bits[i]);
  return values;
}

// t's first values.size() elements = values (T of dtype's size).
template <typename T>
void upload(Backend& backend, const Tensor& t, const std::vector<T>& values)
{
  detail::check_element_size(t, sizeof(T), values.size(), "upload");
  backend.upload(t, values.data(), static_cast<int64_t>(values.size() * sizeof(T)));
}

} // namespace gputwin::engine
