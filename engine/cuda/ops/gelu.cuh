#pragma once
// GeLU, tanh approximation (Hendrycks & Gimpel 2016, Eq. 2 as GPT-2 and Megatron-LM use it), and its derivative.

#include "cuda/ops/common.cuh"

namespace gputwin::engine::cuda {

constexpr float gelu_scale = 0.7978845608028654f; // sqrt(2 / pi)
constexpr float gelu_cubic = 0.044715f;

__global__ void gelu_forward_kernel(FloatPtr out, ConstFloatPtr in, int64_t n)
{
  // out, in (n)
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < static_cast<size_t>(n);
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float x = load(in, i);
    store(out, i, 0.5f * x * (1.0f + tanhf(gelu_scale * (x + gelu_cubic * x * x * x))));
  }
}

// out (n) = gelu(in).
inline void gelu_forward(FloatPtr out, ConstFloatPtr in, int64_t n, cudaStream_t stream)
{
  gelu_forward_kernel<<<grid_for(static_cast<size_t>(n), 256), 256, 0, stream>>>(out, in, n);
  CUDA_CHECK(cudaGetLastError());
}

__global__ void gelu_backward_kernel(FloatPtr d_in, ConstFloatPtr d_out, ConstFloatPtr in, int64_t n)
{
  // d_in, d_out, in (n)
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < static_cast<size_t>(n);
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float x = load(in, i);
    const float t = tanhf(gelu_scale * (x + gelu_cubic * x * x * x));
    const float dt = gelu_scale * (1.0f + 3.0f * gelu_cubic * x * x) * (1.0f - t * t);
    store(d_in, i, load(d_out, i) * (0.5f * (1.0f + t) + 0.5f * x * dt));
  }
}

// d_in (n) = d_out * gelu'(in).
inline void gelu_backward(FloatPtr d_in, ConstFloatPtr d_out, ConstFloatPtr in, int64_t n, cudaStream_t stream)
{
  gelu_backward_kernel<<<grid_for(static_cast<size_t>(n), 256), 256, 0, stream>>>(d_in, d_out, in, n);
  CUDA_CHECK(cudaGetLastError());
}

} // namespace gputwin::engine::cuda
