#pragma once
// Layernorm over the last dimension, fp32 statistics (Ba et al. 2016; llm.c layernorm.cuh):
// out = (x - mean) / sqrt(var + eps) * gamma + beta, and its backward with gamma/beta gradients summed over
// rows in row order (deterministic: one block owns a strip of columns, no atomics).

#include "cuda/ops/common.cuh"

namespace gputwin::engine::cuda {

// One warp per row: mean and 1/sqrt(var + eps) of row `row` of x (rows, cols), two passes as the CPU does.
__device__ __forceinline__ void row_stats(ConstFloatPtr x, size_t row, size_t cols, float eps, float& mean, float& rstd)
{
  const unsigned lane = threadIdx.x % 32u;
  float sum = 0.0f;
  for (size_t c = lane; c < cols; c += 32)
    sum += load(x, row * cols + c);
  mean = warp_sum(sum) / static_cast<float>(cols);
  float var = 0.0f;
  for (size_t c = lane; c < cols; c += 32) {
    const float d = load(x, row * cols + c) - mean;
    var += d * d;
  }
  rstd = rsqrtf(warp_sum(var) / static_cast<float>(cols) + eps);
}

__global__ void layernorm_forward_kernel(FloatPtr out, ConstFloatPtr in, ConstFloatPtr gamma, ConstFloatPtr beta,
                                         int64_t rows, int64_t cols, float eps)
{
  // out, in (rows, cols); gamma, beta (cols)
  const size_t row = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) / 32u;
  if (row >= static_cast<size_t>(rows))
    return;
  const size_t n = static_cast<size_t>(cols);
  float mean = 0, rstd = 0;
  row_stats(in, row, n, eps, mean, rstd);
  for (size_t c = threadIdx.x % 32u; c < n; c += 32)
    store(out, row * n + c, (load(in, row * n + c) - mean) * rstd * load(gamma, c) + load(beta, c));
}

// out (rows, cols) = layernorm(in) * gamma + beta.
inline void layernorm_forward(FloatPtr out, ConstFloatPtr in, ConstFloatPtr gamma, ConstFloatPtr beta, int64_t rows,
                              int64_t cols, float eps, cudaStream_t stream)
{
  const unsigned block = 256;
  layernorm_forward_kernel<<<ceil_div(static_cast<size_t>(rows) * 32u, block), block, 0, stream>>>(out, in, gamma, beta,
                                                                                                   rows, cols, eps);
  CUDA_CHECK(cudaGetLastError());
}

__global__ void layernorm_backward_input_kernel(FloatPtr d_in, float2* stats, ConstFloatPtr d_out, ConstFloatPtr in,
                                                ConstFloatPtr gamma, int64_t rows, int64_t cols, float eps)
{
  // d_in, d_out, in (rows, cols); gamma (cols); stats (rows) = (mean, rstd)
  const size_t row = (blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) / 32u;
  if (row >= static_cast<size_t>(rows))
    return;
  const size_t n = static_cast<size_t>(cols);
  const unsigned lane = threadIdx.x % 32u;
  float mean = 0, rstd = 0;
  row_stats(in, row, n, eps, mean, rstd);
  float m1 = 0, m2 = 0;
  for (size_t c = lane; c < n; c += 32) {
    const float xhat = (load(in, row * n + c) - mean) * rstd;
    const float dxhat = load(d_out, row * n + c) * load(gamma, c);
    m1 += dxhat;
    m2 += dxhat * xhat;
  }
  m1 = warp_sum(m1) / static_cast<float>(cols);
  m2 = warp_sum(m2) / static_cast<float>(cols);
  for (size_t c = lane; c < n; c += 32) {
    const float xhat = (load(in, row * n + c) - mean) * rstd;
    store(d_in, row * n + c, rstd * (load(d_out, row * n + c) * load(gamma, c) - m1 - xhat * m2));
  }
  if (lane == 0)
    stats[row] = make_float2(mean, rstd);
}

// Block (32 columns x 8 row lanes): d_gamma[c] += sum_r d_out[r, c] xhat[r, c], d_beta[c] += sum_r d_out[r, c].
__global__ void layernorm_backward_params_kernel(float* d_gamma, float* d_beta, ConstFloatPtr d_out, ConstFloatPtr in,
                                                 const float2* stats, int64_t rows, int64_t cols)
{
  __shared__ float partial[2][8][33];
  const size_t c = blockIdx.x * 32u + threadIdx.x;
  float dg = 0, db = 0;
  if (c < static_cast<size_t>(cols))
    for (size_t r = threadIdx.y; r < static_cast<size_t>(rows); r += 8) {
      const float dy = load(d_out, r * static_cast<size_t>(cols) + c);
      const float2 s = stats[r];
      dg += dy * (load(in, r * static_cast<size_t>(cols) + c) - s.x) * s.y;
      db += dy;
    }
  partial[0][threadIdx.y][threadIdx.x] = dg;
  partial[1][threadIdx.y][threadIdx.x] = db;
  __syncthreads();
  if (threadIdx.y == 0 && c < static_cast<size_t>(cols)) {
    for (int y = 1; y < 8; ++y) {
      dg += partial[0][y][threadIdx.x];
      db += partial[1][y][threadIdx.x];
    }
    d_gamma[c] += dg;
    d_beta[c] += db;
  }
}

// Floats of scratch layernorm_backward needs: the rows' (mean, rstd).
inline size_t layernorm_backward_scratch_floats(int64_t rows)
{
  return 2 * static_cast<size_t>(rows);
}

// d_in (rows, cols) = the input gradient; d_gamma, d_beta (cols, fp32) += their gradients. `scratch` holds
// layernorm_backward_scratch_floats(rows) floats, 8-byte aligned.
inline void layernorm_backward(FloatPtr d_in, float* d_gamma, float* d_beta, ConstFloatPtr d_out, ConstFloatPtr in,
                               ConstFloatPtr gamma, int64_t rows, int64_t cols, float eps, float* scratch,
                               cudaStream_t stream)
{
  float2* stats = reinterpret_cast<float2*>(scratch);
  const unsigned block = 256;
  layernorm_backward_input_kernel<<<ceil_div(static_cast<size_t>(rows) * 32u, block), block, 0, stream>>>(
      d_in, stats, d_out, in, gamma, rows, cols, eps);
  CUDA_CHECK(cudaGetLastError());
  layernorm_backward_params_kernel<<<ceil_div(static_cast<size_t>(cols), 32), dim3(32, 8), 0, stream>>>(
      d_gamma, d_beta, d_out, in, stats, rows, cols);
  CUDA_CHECK(cudaGetLastError());
}

} // namespace gputwin::engine::cuda
