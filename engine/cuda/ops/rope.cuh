#pragma once
// Rotary position embedding (Su et al. 2021), rotate-half as Megatron-LM and Llama apply it, in place on the Q
// heads and K groups of qkv (seq, batch, (heads + 2 groups) head_dim): the pair (c, c + d/2) of each head turns by
// position x base^(-2c/d); backward turns the gradient back (direction -1). One thread per pair.

#include "cuda/ops/common.cuh"

namespace gputwin::engine::cuda {

struct RopeShape {
  int64_t seq = 1, batch = 1, heads = 1, groups = 1, head_dim = 2;
  int64_t first_position = 0;
  float base = 10000.0f;
};

__global__ void rope_kernel(FloatPtr qkv, ConstFloatPtr in, RopeShape d, float direction)
{
  // qkv (seq, batch, (heads + 2 groups) head_dim), `in` the same memory: Q heads and K groups rotated, V left as
  // it is (each thread reads and writes its own pair)
  const size_t half = static_cast<size_t>(d.head_dim / 2), rotated = static_cast<size_t>(d.heads + d.groups);
  const size_t width = static_cast<size_t>((d.heads + 2 * d.groups) * d.head_dim);
  const size_t total = static_cast<size_t>(d.seq * d.batch) * rotated * half;
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t c = e % half, head = (e / half) % rotated, token = e / (half * rotated); // token = i batch + b
    const size_t i = token / static_cast<size_t>(d.batch);
    // The frequency in double as the CPU computes it, so the angle agrees to fp32.
    const float inv_freq = static_cast<float>(
        pow(static_cast<double>(d.base), -2.0 * static_cast<double>(c) / static_cast<double>(d.head_dim)));
    const float angle = static_cast<float>(d.first_position + static_cast<int64_t>(i)) * inv_freq;
    const float cos_a = cosf(angle), sin_a = direction * sinf(angle);
    const size_t at = token * width + head * static_cast<size_t>(d.head_dim) + c;
    const float x1 = load(in, at), x2 = load(in, at + half);
    store(qkv, at, x1 * cos_a - x2 * sin_a);
    store(qkv, at + half, x2 * cos_a + x1 * sin_a);
  }
}

// Rotates (direction 1) or rotates back (direction -1) the Q and K parts of qkv in place.
inline void rope(FloatPtr qkv, const RopeShape& d, float direction, cudaStream_t stream)
{
  const size_t total = static_cast<size_t>(d.seq * d.batch * (d.heads + d.groups) * (d.head_dim / 2));
  rope_kernel<<<grid_for(total, 256), 256, 0, stream>>>(qkv, ConstFloatPtr(qkv), d, direction);
  CUDA_CHECK(cudaGetLastError());
}

} // namespace gputwin::engine::cuda
