#pragma once
// What every operator header of the CUDA backend shares: typed device pointers (an activation is bf16 or
// f32, read as fp32 and written rounded to its type), warp/block reductions in fp32, grid sizing, and the
// NVTX range that names each op in Nsight as the tracer names it.

#include "cuda/cuda_check.hpp"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstddef>
#include <cstdint>

namespace gputwin::engine::cuda {

// A device pointer with its element type: bf16 storage or fp32. Kernels branch on the flag once per element
// (uniform across the warp), which keeps one instantiation per kernel and the nvcc build short.
struct FloatPtr {
  void* p = nullptr;
  bool bf16 = false;
};
struct ConstFloatPtr {
  const void* p = nullptr;
  bool bf16 = false;
  ConstFloatPtr() = default;
  ConstFloatPtr(const void* ptr, bool is_bf16) : p(ptr), bf16(is_bf16) {}
  ConstFloatPtr(FloatPtr f) : p(f.p), bf16(f.bf16) {} // NOLINT: a writable pointer reads as well
};

__device__ __forceinline__ float load(ConstFloatPtr t, size_t i)
{
  return t.bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(t.p)[i]) : static_cast<const float*>(t.p)[i];
}

// Rounds to nearest even into bf16 (as float_to_bf16 on the host does).
__device__ __forceinline__ void store(FloatPtr t, size_t i, float v)
{
  if (t.bf16)
    static_cast<__nv_bfloat16*>(t.p)[i] = __float2bfloat16_rn(v);
  else
    static_cast<float*>(t.p)[i] = v;
}

__device__ __forceinline__ float warp_sum(float v)
{
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__device__ __forceinline__ float warp_max(float v)
{
  for (int offset = 16; offset > 0; offset >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// The sum (max) over the block of each thread's v, returned to every thread. REQUIRES: blockDim.x a multiple
// of 32, at most 1024; every thread of the block calls it.
__device__ __forceinline__ float block_reduce(float v, bool is_max)
{
  __shared__ float partial[32];
  const int lane = static_cast<int>(threadIdx.x % 32u), warp = static_cast<int>(threadIdx.x / 32u);
  const int warps = static_cast<int>(blockDim.x / 32u);
  v = is_max ? warp_max(v) : warp_sum(v);
  __syncthreads(); // partial[] may still be read by a previous call
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  v = lane < warps ? partial[lane] : (is_max ? -INFINITY : 0.0f);
  return is_max ? warp_max(v) : warp_sum(v);
}

inline unsigned int ceil_div(size_t n, size_t d)
{
  return static_cast<unsigned int>((n + d - 1) / d);
}

// A grid-stride launch size for n elements: enough blocks to fill the GPU, never zero.
inline unsigned int grid_for(size_t n, unsigned int block)
{
  const size_t blocks = (n + block - 1) / block;
  return static_cast<unsigned int>(blocks == 0 ? 1 : (blocks > 65535u * 8u ? 65535u * 8u : blocks));
}

// Names one backend call in Nsight's NVTX row (inside the range of the trace op that made it).
class NvtxRange {
public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

} // namespace gputwin::engine::cuda
