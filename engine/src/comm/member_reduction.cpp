#include "gputwin/engine/comm/member_reduction.hpp"

#include "gputwin/engine/comm/communicator.hpp"

#include <algorithm>
#include <string>

namespace gputwin::engine {

namespace {
float read_element(const void* base, DType dtype, int64_t i)
{
  if (dtype == DType::F32)
    return static_cast<const float*>(base)[i];
  return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
}
} // namespace

void require_float_type(DType dtype, const char* op)
{
  if (dtype != DType::F32 && dtype != DType::BF16)
    throw CommError(std::string(op) + ": expected f32 or bf16 elements, got " + to_string(dtype));
}

std::vector<float> reduce_members(const std::vector<const void*>& inputs, int64_t offset, int64_t count, DType dtype,
                                  ReduceOp op)
{
  std::vector<float> result(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    float acc = read_element(inputs[0], dtype, offset + i);
    for (size_t r = 1; r < inputs.size(); ++r) {
      const float x = read_element(inputs[r], dtype, offset + i);
      acc = op == ReduceOp::Sum ? acc + x : std::max(acc, x);
    }
    result[static_cast<size_t>(i)] = acc;
  }
  return result;
}

void store_elements(void* out, DType dtype, const std::vector<float>& values)
{
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::F32)
      static_cast<float*>(out)[i] = values[i];
    else
      static_cast<uint16_t*>(out)[i] = float_to_bf16(values[i]);
  }
}

} // namespace gputwin::engine
