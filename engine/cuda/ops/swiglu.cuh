#pragma once
// SwiGLU (Shazeer 2020; Llama's MLP): out = silu(gate) * up over rows of [gate | up] (one rank's share of fc1's
// gate and up projections), and its backward, elementwise as the CPU backend computes it.

#include "cuda/ops/common.cuh"

namespace gputwin::engine::cuda {

__device__ __forceinline__ float sigmoid(float x)
{
  return 1.0f / (1.0f + expf(-x));
}

__global__ void swiglu_forward_kernel(FloatPtr out, ConstFloatPtr in, int64_t rows, int64_t cols)
{
  // out (rows, cols); in (rows, 2 cols)
  const size_t n = static_cast<size_t>(cols), total = static_cast<size_t>(rows) * n;
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t r = e / n, c = e % n;
    const float gate = load(in, r * 2 * n + c), up = load(in, r * 2 * n + n + c);
    store(out, e, gate * sigmoid(gate) * up);
  }
}

inline void swiglu_forward(FloatPtr out, ConstFloatPtr in, int64_t rows, int64_t cols, cudaStream_t stream)
{
  const size_t total = static_cast<size_t>(rows * cols);
  swiglu_forward_kernel<<<grid_for(total, 256), 256, 0, stream>>>(out, in, rows, cols);
  CUDA_CHECK(cudaGetLastError());
}

__global__ void swiglu_backward_kernel(FloatPtr d_in, ConstFloatPtr d_out, ConstFloatPtr in, int64_t rows,
                                       int64_t cols)
{
  // d_in, in (rows, 2 cols); d_out (rows, cols)
  const size_t n = static_cast<size_t>(cols), total = static_cast<size_t>(rows) * n;
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t r = e / n, c = e % n;
    const float gate = load(in, r * 2 * n + c), up = load(in, r * 2 * n + n + c);
    const float dy = load(d_out, e), sg = sigmoid(gate);
    store(d_in, r * 2 * n + c, dy * up * sg * (1.0f + gate * (1.0f - sg)));
    store(d_in, r * 2 * n + n + c, dy * gate * sg);
  }
}

// d_in (rows, 2 cols) = [d gate | d up].
inline void swiglu_backward(FloatPtr d_in, ConstFloatPtr d_out, ConstFloatPtr in, int64_t rows, int64_t cols,
                            cudaStream_t stream)
{
  const size_t total = static_cast<size_t>(rows * cols);
  swiglu_backward_kernel<<<grid_for(total, 256), 256, 0, stream>>>(d_in, d_out, in, rows, cols);
  CUDA_CHECK(cudaGetLastError());
}

} // namespace gputwin::engine::cuda
