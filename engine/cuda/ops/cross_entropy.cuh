#pragma once
// Fused vocabulary-parallel cross-entropy (Megatron-LM _VocabParallelCrossEntropy): each rank holds the logits
// of its vocabulary slice; only the row maxima, the sums of exponentials and the target logits (3 numbers per
// token) cross ranks, never the vocabulary.

#include "cuda/ops/common.cuh"

namespace gputwin::engine::cuda {

__global__ void cross_entropy_max_kernel(float* row_max, const float* logits, int64_t cols, int64_t valid_cols)
{
  // row_max (rows); logits (rows, cols); one block per row
  const size_t base = blockIdx.x * static_cast<size_t>(cols);
  float m = -INFINITY;
  for (size_t c = threadIdx.x; c < static_cast<size_t>(valid_cols); c += blockDim.x)
    m = fmaxf(m, logits[base + c]);
  m = block_reduce(m, true);
  if (threadIdx.x == 0)
    row_max[blockIdx.x] = m;
}

// row_max (rows) = the maximum of each row's valid_cols logits (rows, cols).
inline void cross_entropy_local_max(float* row_max, const float* logits, int64_t rows, int64_t cols, int64_t valid_cols,
                                    cudaStream_t stream)
{
  if (rows == 0)
    return;
  cross_entropy_max_kernel<<<static_cast<unsigned>(rows), 256, 0, stream>>>(row_max, logits, cols, valid_cols);
  CUDA_CHECK(cudaGetLastError());
}

__global__ void cross_entropy_sums_kernel(float* sum_exp, float* target_logit, const float* logits,
                                          const int32_t* targets, const float* row_max, int64_t cols,
                                          int64_t valid_cols, int64_t vocab_start)
{
  // sum_exp, target_logit, targets, row_max (rows); logits (rows, cols); one block per row
  const size_t r = blockIdx.x, base = r * static_cast<size_t>(cols);
  const float m = row_max[r];
  float sum = 0;
  for (size_t c = threadIdx.x; c < static_cast<size_t>(valid_cols); c += blockDim.x)
    sum += expf(logits[base + c] - m);
  sum = block_reduce(sum, false);
  if (threadIdx.x == 0) {
    sum_exp[r] = sum;
    const int64_t local = targets[r] - vocab_start;
    target_logit[r] = local >= 0 && local < valid_cols ? logits[base + static_cast<size_t>(local)] : 0.0f;
  }
}

// sum_exp (rows) = sum of exp(logit - row_max) over the slice; target_logit (rows) = the target's logit if this
// rank owns it, else 0.
inline void cross_entropy_local_sums(float* sum_exp, float* target_logit, const float* logits, const int32_t* targets,
                                     const float* row_max, int64_t rows, int64_t cols, int64_t valid_cols,
                                     int64_t vocab_start, cudaStream_t stream)
{
  if (rows == 0)
    return;
  cross_entropy_sums_kernel<<<static_cast<unsigned>(rows), 256, 0, stream>>>(sum_exp, target_logit, logits, targets,
                                                                             row_max, cols, valid_cols, vocab_start);
  CUDA_CHECK(cudaGetLastError());
}

__global__ void cross_entropy_backward_kernel(float* d_logits, const float* logits, const int32_t* targets,
                                              const float* row_max, const float* sum_exp, int64_t rows, int64_t cols,
                                              int64_t valid_cols, int64_t vocab_start, float scale)
{
  // d_logits, logits (rows, cols); targets, row_max, sum_exp (rows)
  const size_t total = static_cast<size_t>(rows) * static_cast<size_t>(cols);
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t r = e / static_cast<size_t>(cols);
    const int64_t c = static_cast<int64_t>(e % static_cast<size_t>(cols));
    if (c >= valid_cols) {
      d_logits[e] = 0.0f;
      continue;
    }
    const float p = expf(logits[e] - row_max[r]) * (1.0f / sum_exp[r]);
    d_logits[e] = scale * (p - (c == targets[r] - vocab_start ? 1.0f : 0.0f));
  }
}

// d_logits (rows, cols) = scale (softmax - one_hot(target)) over the slice, 0 in the padding columns.
inline void cross_entropy_backward(float* d_logits, const float* logits, const int32_t* targets, const float* row_max,
                                   const float* sum_exp, int64_t rows, int64_t cols, int64_t valid_cols,
                                   int64_t vocab_start, float scale, cudaStream_t stream)
{
  cross_entropy_backward_kernel<<<grid_for(static_cast<size_t>(rows * cols), 256), 256, 0, stream>>>(
      d_logits, logits, targets, row_max, sum_exp, rows, cols, valid_cols, vocab_start, scale);
  CUDA_CHECK(cudaGetLastError());
}

} // namespace gputwin::engine::cuda
