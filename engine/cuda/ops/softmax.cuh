#pragma once
// Scaled, causally masked softmax over attention scores (Vaswani et al. 2017, Eq. 1) and its backward:
// row r of (rows, seq) is query i = r % seq and sees keys j <= i; probabilities above the diagonal are 0.

#include "cuda/ops/common.cuh"

namespace gputwin::engine::cuda {

__global__ void causal_softmax_forward_kernel(FloatPtr probs, ConstFloatPtr scores, int64_t rows, int64_t seq,
                                              float scale)
{
  // probs, scores (rows, seq); one block per row
  const size_t r = blockIdx.x, n = static_cast<size_t>(seq), i = r % n, base = r * n;
  float m = -INFINITY;
  for (size_t j = threadIdx.x; j <= i; j += blockDim.x)
    m = fmaxf(m, load(scores, base + j) * scale);
  m = block_reduce(m, true);
  float sum = 0;
  for (size_t j = threadIdx.x; j <= i; j += blockDim.x)
    sum += expf(load(scores, base + j) * scale - m);
  const float inv = 1.0f / block_reduce(sum, false);
  for (size_t j = threadIdx.x; j < n; j += blockDim.x)
    store(probs, base + j, j <= i ? expf(load(scores, base + j) * scale - m) * inv : 0.0f);
}

// probs (rows, seq) = softmax over j <= r % seq of scale x scores; 0 above the diagonal.
inline void causal_softmax_forward(FloatPtr probs, ConstFloatPtr scores, int64_t rows, int64_t seq, float scale,
                                   cudaStream_t stream)
{
  if (rows == 0)
    return;
  causal_softmax_forward_kernel<<<static_cast<unsigned>(rows), 256, 0, stream>>>(probs, scores, rows, seq, scale);
  CUDA_CHECK(cudaGetLastError());
}

__global__ void causal_softmax_backward_kernel(FloatPtr d_scores, ConstFloatPtr d_probs, ConstFloatPtr probs,
                                               int64_t rows, int64_t seq, float scale)
{
  // d_scores, d_probs, probs (rows, seq); one block per row
  const size_t r = blockIdx.x, n = static_cast<size_t>(seq), i = r % n, base = r * n;
  float dot = 0;
  for (size_t j = threadIdx.x; j <= i; j += blockDim.x)
    dot += load(probs, base + j) * load(d_probs, base + j);
  dot = block_reduce(dot, false);
  for (size_t j = threadIdx.x; j < n; j += blockDim.x)
    store(d_scores, base + j, j <= i ? scale * load(probs, base + j) * (load(d_probs, base + j) - dot) : 0.0f);
}

// d_scores (rows, seq) = scale x probs (d_probs - sum_j probs d_probs) for j <= r % seq, 0 above.
inline void causal_softmax_backward(FloatPtr d_scores, ConstFloatPtr d_probs, ConstFloatPtr probs, int64_t rows,
                                    int64_t seq, float scale, cudaStream_t stream)
{
  if (rows == 0)
    return;
  causal_softmax_backward_kernel<<<static_cast<unsigned>(rows), 256, 0, stream>>>(d_scores, d_probs, probs, rows, seq,
                                                                                  scale);
  CUDA_CHECK(cudaGetLastError());
}

} // namespace gputwin::engine::cuda
