#pragma once
// RMSNorm over the last dimension (Zhang & Sennrich 2019; Llama): out = x / sqrt(mean(x^2) + eps) * gamma, fp32
// statistics, and its backward with gamma's gradient summed over rows in row order (deterministic: one block owns
// a strip of columns, no atomics), as layernorm.cuh does.

#include "cuda/ops/common.cuh"

namespace gputwin::engine::cuda {

// One warp per row: 1 / rms of row `row` of x (rows, cols).
__device__ __forceinline__ float row_inverse_rms(ConstFloatPtr x, size_t row, size_t cols, float eps)
{
  float sum = 0.0f;
  for (size_t c = threadIdx.x % 32u; c < cols; c += 32) {
    const float v = load(x, row * cols + c);
    sum += v * v;
  }
  return rsqrtf(warp_sum(sum) / static_cast<float>(cols) + eps);
}

__global__ void rmsnorm_forward_kernel(FloatPtr out, ConstFloatPtr in, ConstFloatPtr gamma, int64_t rows, int64_t cols,
                                       float eps)
{
  // out, in (rows, cols); gamma (cols)
  const size_t row = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) / 32u;
  if (row >= static_cast<size_t>(rows))
    return;
  const size_t n = static_cast<size_t>(cols);
  const float rstd = row_inverse_rms(in, row, n, eps);
  for (size_t c = threadIdx.x % 32u; c < n; c += 32)
    store(out, row * n + c, load(in, row * n + c) * rstd * load(gamma, c));
}

// out (rows, cols) = rmsnorm(in) * gamma.
inline void rmsnorm_forward(FloatPtr out, ConstFloatPtr in, ConstFloatPtr gamma, int64_t rows, int64_t cols, float eps,
                            cudaStream_t stream)
{
  const unsigned block = 256;
  rmsnorm_forward_kernel<<<ceil_div(static_cast<size_t>(rows) * 32u, block), block, 0, stream>>>(out, in, gamma, rows,
                                                                                                 cols, eps);
  CUDA_CHECK(cudaGetLastError());
}

__global__ void rmsnorm_backward_input_kernel(FloatPtr d_in, float* rstds, ConstFloatPtr d_out, ConstFloatPtr in,
                                              ConstFloatPtr gamma, int64_t rows, int64_t cols, float eps)
{
  // d_in, d_out, in (rows, cols); gamma (cols); rstds (rows)
  const size_t row = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) / 32u;
  if (row >= static_cast<size_t>(rows))
    return;
  const size_t n = static_cast<size_t>(cols);
  const unsigned lane = threadIdx.x % 32u;
  const float rstd = row_inverse_rms(in, row, n, eps);
  float m = 0;
  for (size_t c = lane; c < n; c += 32)
    m += load(d_out, row * n + c) * load(gamma, c) * load(in, row * n + c) * rstd;
  m = warp_sum(m) / static_cast<float>(cols);
  for (size_t c = lane; c < n; c += 32) {
    const float xhat = load(in, row * n + c) * rstd;
    store(d_in, row * n + c, rstd * (load(d_out, row * n + c) * load(gamma, c) - xhat * m));
  }
  if (lane == 0)
    rstds[row] = rstd;
}

// Block (32 columns x 8 row lanes): d_gamma[c] += sum_r d_out[r, c] x[r, c] rstd[r].
__global__ void rmsnorm_backward_gamma_kernel(float* d_gamma, ConstFloatPtr d_out, ConstFloatPtr in,
                                              const float* rstds, int64_t rows, int64_t cols)
{
  __shared__ float partial[8][33];
  const size_t c = blockIdx.x * 32u + threadIdx.x;
  float dg = 0;
  if (c < static_cast<size_t>(cols))
    for (size_t r = threadIdx.y; r < static_cast<size_t>(rows); r += 8)
      dg += load(d_out, r * static_cast<size_t>(cols) + c) * load(in, r * static_cast<size_t>(cols) + c) * rstds[r];
  partial[threadIdx.y][threadIdx.x] = dg;
  __syncthreads();
  if (threadIdx.y == 0 && c < static_cast<size_t>(cols)) {
    for (int y = 1; y < 8; ++y)
      dg += partial[y][threadIdx.x];
    d_gamma[c] += dg;
  }
}

// Floats of scratch rmsnorm_backward needs: the rows' 1 / rms.
inline size_t rmsnorm_backward_scratch_floats(int64_t rows)
{
  return static_cast<size_t>(rows);
}

// d_in (rows, cols) = the input gradient; d_gamma (cols, fp32) += gamma's gradient. `scratch` holds
// rmsnorm_backward_scratch_floats(rows) floats.
inline void rmsnorm_backward(FloatPtr d_in, float* d_gamma, ConstFloatPtr d_out, ConstFloatPtr in, ConstFloatPtr gamma,
                             int64_t rows, int64_t cols, float eps, float* scratch, cudaStream_t stream)
{
  const unsigned block = 256;
  rmsnorm_backward_input_kernel<<<ceil_div(static_cast<size_t>(rows) * 32u, block), block, 0, stream>>>(
      d_in, scratch, d_out, in, gamma, rows, cols, eps);
  CUDA_CHECK(cudaGetLastError());
  rmsnorm_backward_gamma_kernel<<<ceil_div(static_cast<size_t>(cols), 32), dim3(32, 8), 0, stream>>>(
      d_gamma, d_out, in, scratch, rows, cols);
  CUDA_CHECK(cudaGetLastError());
}

} // namespace gputwin::engine::cuda
