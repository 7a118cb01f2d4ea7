#pragma once
// Element types and devices of engine tensors, and the bf16 <-> fp32 conversions of the CPU backend.

#include <cstdint>
#include <cstring>
#include <string>

namespace gputwin::engine {

enum class DType {
  F32,  // compute, gradients, master weights, optimizer states
  BF16, // weights used by the kernels and every stored activation (Korthikanti et al. 2022 assume 2 bytes)
  U8,   // dropout masks, 1 byte per element as in the paper
  I32,  // token ids
};

enum class Device { Cpu, Cuda };

inline int64_t dtype_bytes(DType t)
{
  switch (t) {
  case DType::F32: return 4;
  case DType::BF16: return 2;
  case DType::U8: return 1;
  case DType::I32: return 4;
  }
  return 0;
}

std::string to_string(DType t);  // "f32", "bf16", "u8", "i32"
std::string to_string(Device d); // "cpu", "cuda"

// fp32 -> bf16 with round-to-nearest-even (NaN stays a quiet NaN), as the hardware conversion does.
inline uint16_t float_to_bf16(float value)
{
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u)
    return 0x7fc0;
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

inline float bf16_to_float(uint16_t value)
{
  const uint32_t bits = static_cast<uint32_t>(value) << 16;
  float result = 0;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

// The fp32 value nearest to `value` that bf16 can hold.
inline float round_to_bf16(float value)
{
  return bf16_to_float(float_to_bf16(value));
}

} // namespace gputwin::engine
