#pragma once
// The reduction of every host-memory communicator (in-process threads, TCP processes): element i of the result
// is the members' elements i accumulated in fp32 in member order (sum or max) and rounded once to the type, so
// every communicator gives the same bits whatever the timing (cuda/ops/collective.cuh is its device twin).

#include "gputwin/engine/comm/buffer_ops.hpp"
#include "gputwin/engine/core/dtype.hpp"

#include <cstdint>
#include <vector>

namespace gputwin::engine {

// Throws CommError naming `op` unless `dtype` is f32 or bf16.
void require_float_type(DType dtype, const char* op);

// result[i] = inputs[0][offset + i] op inputs[1][offset + i] op ..., i < count, each input f32 or bf16 (`dtype`).
std::vector<float> reduce_members(const std::vector<const void*>& inputs, int64_t offset, int64_t count, DType dtype,
                                  ReduceOp op);

// out[i] = values[i] rounded to `dtype` (f32 or bf16).
void store_elements(void* out, DType dtype, const std::vector<float>& values);

} // namespace gputwin::engine
