#pragma once
// Residual adds, bias, conversion and accumulation: the memory-bound elementwise ops of a layer.

#include "cuda/ops/common.cuh"

namespace gputwin::engine::cuda {

__global__ void add_kernel(FloatPtr out, ConstFloatPtr a, ConstFloatPtr b, int64_t n)
{
  // out, a, b (n)
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < static_cast<size_t>(n);
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    store(out, i, load(a, i) + load(b, i));
}

// out (n) = a + b (the residual connection).
inline void add_forward(FloatPtr out, ConstFloatPtr a, ConstFloatPtr b, int64_t n, cudaStream_t stream)
{
  add_kernel<<<grid_for(static_cast<size_t>(n), 256), 256, 0, stream>>>(out, a, b, n);
  CUDA_CHECK(cudaGetLastError());
}

__global__ void add_bias_kernel(FloatPtr out, ConstFloatPtr in, ConstFloatPtr bias, int64_t rows, int64_t cols)
{
  // out, in (rows, cols); bias (cols)
  const size_t n = static_cast<size_t>(rows) * static_cast<size_t>(cols);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    store(out, i, load(in, i) + load(bias, i % static_cast<size_t>(cols)));
}

// out (rows, cols) = in + bias broadcast over rows; out may alias in.
inline void add_bias_forward(FloatPtr out, ConstFloatPtr in, ConstFloatPtr bias, int64_t rows, int64_t cols,
                             cudaStream_t stream)
{
  add_bias_kernel<<<grid_for(static_cast<size_t>(rows * cols), 256), 256, 0, stream>>>(out, in, bias, rows, cols);
  CUDA_CHECK(cudaGetLastError());
}

// Block (32 columns x 8 row lanes): d_bias[c] += sum over rows of d_out[r, c], the same order on every run.
__global__ void bias_backward_kernel(float* d_bias, ConstFloatPtr d_out, int64_t rows, int64_t cols)
{
  __shared__ float partial[8][33];
  const size_t c = blockIdx.x * 32u + threadIdx.x;
  float sum = 0;
  if (c < static_cast<size_t>(cols))
    for (size_t r = threadIdx.y; r < static_cast<size_t>(rows); r += 8)
      sum += load(d_out, r * static_cast<size_t>(cols) + c);
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < static_cast<size_t>(cols)) {
    for (int y = 1; y < 8; ++y)
      sum += partial[y][threadIdx.x];
    d_bias[c] += sum;
  }
}

// d_bias (cols, fp32) += the column sums of d_out (rows, cols).
inline void bias_backward(float* d_bias, ConstFloatPtr d_out, int64_t rows, int64_t cols, cudaStream_t stream)
{
  bias_backward_kernel<<<ceil_div(static_cast<size_t>(cols), 32), dim3(32, 8), 0, stream>>>(d_bias, d_out, rows, cols);
  CUDA_CHECK(cudaGetLastError());
}

__global__ void convert_kernel(FloatPtr out, ConstFloatPtr in, int64_t n)
{
  // out, in (n)
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < static_cast<size_t>(n);
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    store(out, i, load(in, i));
}

// out (n) = in converted to out's type (round to nearest even into bf16).
inline void convert(FloatPtr out, ConstFloatPtr in, int64_t n, cudaStream_t stream)
{
  convert_kernel<<<grid_for(static_cast<size_t>(n), 256), 256, 0, stream>>>(out, in, n);
  CUDA_CHECK(cudaGetLastError());
}

__global__ void accumulate_kernel(float* out, ConstFloatPtr in, int64_t n)
{
  // out (n, fp32), in (n)
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < static_cast<size_t>(n);
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    out[i] += load(in, i);
}

// out (n, fp32) += in.
inline void accumulate(float* out, ConstFloatPtr in, int64_t n, cudaStream_t stream)
{
  accumulate_kernel<<<grid_for(static_cast<size_t>(n), 256), 256, 0, stream>>>(out, in, n);
  CUDA_CHECK(cudaGetLastError());
}

} // namespace gputwin::engine::cuda
