#pragma once
// Counter-based dropout (Srivastava et al. 2014) whose mask is a pure function of (key, logical position):
// counter_rng.hpp's generator, bit-identical to the CPU backend, so every shard and every recompute of a
// tensor draws the CPU run's mask (Korthikanti et al. 2022, Section 5).

#include "cuda/ops/common.cuh"
#include "gputwin/engine/backend/counter_rng.hpp"

namespace gputwin::engine::cuda {

// Where the local block sits in the logical tensor: local (l0..l3) at offsets (o0..o3) of global (g0..g3).
struct DropoutBlock {
  int64_t local[4];
  int64_t offset[4];
  int64_t global[4];
};

__global__ void dropout_forward_kernel(FloatPtr out, uint8_t* mask, ConstFloatPtr in, uint64_t key, float probability,
                                       DropoutBlock blk)
{
  // out, mask, in (l0, l1, l2, l3)
  const size_t n = static_cast<size_t>(blk.local[0] * blk.local[1] * blk.local[2] * blk.local[3]);
  const float keep_scale = 1.0f / (1.0f - probability);
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    size_t rest = e;
    const int64_t i3 = static_cast<int64_t>(rest % static_cast<size_t>(blk.local[3]));
    rest /= static_cast<size_t>(blk.local[3]);
    const int64_t i2 = static_cast<int64_t>(rest % static_cast<size_t>(blk.local[2]));
    rest /= static_cast<size_t>(blk.local[2]);
    const int64_t i1 = static_cast<int64_t>(rest % static_cast<size_t>(blk.local[1]));
    const int64_t i0 = static_cast<int64_t>(rest / static_cast<size_t>(blk.local[1]));
    const int64_t logical =
        (((blk.offset[0] + i0) * blk.global[1] + blk.offset[1] + i1) * blk.global[2] + blk.offset[2] + i2) *
            blk.global[3] +
        blk.offset[3] + i3;
    const bool keep = counter_uniform(key, static_cast<uint64_t>(logical)) >= probability;
    mask[e] = keep ? 1 : 0;
    store(out, e, keep ? load(in, e) * keep_scale : 0.0f);
  }
}

// out = in * mask / (1 - p), mask (u8) = 1 where counter_uniform(key, logical position) >= p.
inline void dropout_forward(FloatPtr out, uint8_t* mask, ConstFloatPtr in, uint64_t key, float probability,
                            const DropoutBlock& blk, cudaStream_t stream)
{
  const size_t n = static_cast<size_t>(blk.local[0] * blk.local[1] * blk.local[2] * blk.local[3]);
  dropout_forward_kernel<<<grid_for(n, 256), 256, 0, stream>>>(out, mask, in, key, probability, blk);
  CUDA_CHECK(cudaGetLastError());
}

__global__ void dropout_backward_kernel(FloatPtr d_in, ConstFloatPtr d_out, const uint8_t* mask, int64_t n,
                                        float probability)
{
  // d_in, d_out, mask (n)
  const float keep_scale = 1.0f / (1.0f - probability);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < static_cast<size_t>(n);
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    store(d_in, i, mask[i] ? load(d_out, i) * keep_scale : 0.0f);
}

// d_in (n) = d_out * mask / (1 - p).
inline void dropout_backward(FloatPtr d_in, ConstFloatPtr d_out, const uint8_t* mask, int64_t n, float probability,
                             cudaStream_t stream)
{
  dropout_backward_kernel<<<grid_for(static_cast<size_t>(n), 256), 256, 0, stream>>>(d_in, d_out, mask, n, probability);
  CUDA_CHECK(cudaGetLastError());
}

} // namespace gputwin::engine::cuda
