#pragma once
// The reduction of the in-process communicator's device path (CudaBackend::buffer_ops()): every member's
// buffer on one GPU, summed (or maxed) element by element in fp32 in member order and rounded once, exactly as
// the host reduction of comm/in_process_world.cpp does.
#include "cuda/ops/common.cuh"

#include <stdexcept>
#include <string>

namespace gputwin::engine::cuda {

inline constexpr int max_reduce_members = 64;

__device__ __forceinline__ float load_member(const void* p, bool bf16, size_t i)
{
  return bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]) : static_cast<const float*>(p)[i];
}

struct ReduceSources {
  const void* p[max_reduce_members];
  int count;
};

__global__ void member_reduce_kernel(FloatPtr out, ReduceSources src, bool bf16, int64_t offset, int64_t n, bool is_max)
{
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < static_cast<size_t>(n);
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t at = static_cast<size_t>(offset) + i;
    float acc = load_member(src.p[0], bf16, at);
    for (int r = 1; r < src.count; ++r) {
      const float x = load_member(src.p[r], bf16, at);
      acc = is_max ? (acc < x ? x : acc) : acc + x; // std::max(acc, x) and + as on the host
    }
    store(out, i, acc);
  }
}

// out[i] = src[0][offset + i] op ... op src[members - 1][offset + i], i < n, all of one type (bf16 or f32).
inline void member_reduce(void* out, const void* const* src, int members, bool bf16, int64_t offset, int64_t n,
                          bool is_max, cudaStream_t stream)
{
  if (members < 1 || members > max_reduce_members)
    throw std::logic_error("member_reduce: " + std::to_string(members) + " members (1 to " +
                           std::to_string(max_reduce_members) + ")");
  if (n == 0)
    return;
  ReduceSources s{};
  for (int r = 0; r < members; ++r)
    s.p[r] = src[r];
  s.count = members;
  member_reduce_kernel<<<grid_for(static_cast<size_t>(n), 256), 256, 0, stream>>>(FloatPtr{out, bf16}, s, bf16, offset,
                                                                                  n, is_max);
  CUDA_CHECK(cudaGetLastError());
}

} // namespace gputwin::engine::cuda
