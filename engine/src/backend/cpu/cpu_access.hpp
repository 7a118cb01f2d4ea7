#pragma once
// Element access shared by the CPU kernels: read f32/bf16 as fp32, write rounding to the tensor's type, and
// size checks that name the kernel.

#include "gputwin/engine/core/tensor.hpp"

#include <stdexcept>
#include <string>

namespace gputwin::engine::cpu {

inline void require_elements(const char* kernel, const Tensor& t, int64_t elements)
{
  if (!t.defined() || t.numel() < elements)
    throw std::logic_error(std::string(kernel) + ": tensor " + t.describe() + " has fewer than " +
                           std::to_string(elements) + " elements");
}

inline void require_float(const char* kernel, const Tensor& t)
{
  if (t.dtype() != DType::F32 && t.dtype() != DType::BF16)
    throw std::logic_error(std::string(kernel) + ": expected an f32 or bf16 tensor, got " + t.describe());
}

inline float load(const Tensor& t, int64_t i)
{
  return load_float(t, i);
}

inline void store(const Tensor& t, int64_t i, float value)
{
  if (t.dtype() == DType::F32)
    t.f32()[i] = value;
  else
    t.bf16()[i] = float_to_bf16(value);
}

// Reads n elements starting at `offset` into fp32 `out`.
inline void load_row(const Tensor& t, int64_t offset, int64_t n, float* out)
{
  if (t.dtype() == DType::F32) {
    const float* p = t.f32() + offset;
    for (int64_t i = 0; i < n; ++i)
      out[i] = p[i];
  } else {
    const uint16_t* p = t.bf16() + offset;
    for (int64_t i = 0; i < n; ++i)
      out[i] = bf16_to_float(p[i]);
  }
}

// A product's operand (GEMM, attention): products take bf16 operands with fp32 sums, so an fp32 element (a
// gradient) is rounded to bf16 first, as the CUDA backend's tensor-core GEMMs read it (and as Megatron-LM keeps
// activation gradients in bf16). A bf16 element is read exactly.
inline float load_operand(const Tensor& t, int64_t i)
{
  return t.dtype() == DType::F32 ? round_to_bf16(t.f32()[i]) : bf16_to_float(t.bf16()[i]);
}

inline void load_operand_row(const Tensor& t, int64_t offset, int64_t n, float* out)
{
  load_row(t, offset, n, out);
  if (t.dtype() == DType::F32)
    for (int64_t i = 0; i < n; ++i)
      out[i] = round_to_bf16(out[i]);
}

inline void store_row(const Tensor& t, int64_t offset, int64_t n, const float* in)
{
  if (t.dtype() == DType::F32) {
    float* p = t.f32() + offset;
    for (int64_t i = 0; i < n; ++i)
      p[i] = in[i];
  } else {
    uint16_t* p = t.bf16() + offset;
    for (int64_t i = 0; i < n; ++i)
      p[i] = float_to_bf16(in[i]);
  }
}

} // namespace gputwin::engine::cpu
