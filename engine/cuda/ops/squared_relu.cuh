#pragma once
// Squared ReLU (So et al. 2021, "Primer"; Nemotron-4's MLP activation) and its derivative.

#include "cuda/ops/common.cuh"

namespace gputwin::engine::cuda {

__global__ void squared_relu_forward_kernel(FloatPtr out, ConstFloatPtr in, int64_t n)
{
  // out, in (n)
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < static_cast<size_t>(n);
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float relu = fmaxf(load(in, i), 0.0f);
    store(out, i, relu * relu);
  }
}

// out (n) = max(in, 0)^2.
inline void squared_relu_forward(FloatPtr out, ConstFloatPtr in, int64_t n, cudaStream_t stream)
{
  squared_relu_forward_kernel<<<grid_for(static_cast<size_t>(n), 256), 256, 0, stream>>>(out, in, n);
  CUDA_CHECK(cudaGetLastError());
}

__global__ void squared_relu_backward_kernel(FloatPtr d_in, ConstFloatPtr d_out, ConstFloatPtr in, int64_t n)
{
  // d_in, d_out, in (n)
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < static_cast<size_t>(n);
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    store(d_in, i, load(d_out, i) * 2.0f * fmaxf(load(in, i), 0.0f));
}

// d_in (n) = d_out * 2 max(in, 0).
inline void squared_relu_backward(FloatPtr d_in, ConstFloatPtr d_out, ConstFloatPtr in, int64_t n,
                                  cudaStream_t stream)
{
  squared_relu_backward_kernel<<<grid_for(static_cast<size_t>(n), 256), 256, 0, stream>>>(d_in, d_out, in, n);
  CUDA_CHECK(cudaGetLastError());
}

} // namespace gputwin::engine::cuda
