#pragma once
// The attention core without flash attention (Megatron-LM's unfused path): per sample, strided-batched
// cuBLASLt GEMMs over the heads, reading Q, K and V in place from qkv (seq, batch, 3 * heads * head_dim)
// laid out [Q heads | K heads | V heads]; scores and probabilities are (batch, heads, seq, seq).

#include "cuda/ops/matmul.cuh"

#include <cmath>

namespace gputwin::engine::cuda {

struct AttentionShape {
  int64_t batch = 1, heads = 1, seq = 1, head_dim = 1;
};

__global__ void zero_above_diagonal_kernel(FloatPtr scores, int64_t matrices, int64_t seq)
{
  // scores (matrices, seq, seq): element (i, j) with j > i set to 0
  const size_t n = static_cast<size_t>(seq), total = static_cast<size_t>(matrices) * n * n;
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<size_t>(gridDim.x) * blockDim.x)
    if (e % n > (e / n) % n)
      store(scores, e, 0.0f);
}

inline void zero_above_diagonal(FloatPtr scores, int64_t matrices, int64_t seq, cudaStream_t stream)
{
  const size_t total = static_cast<size_t>(matrices * seq * seq);
  zero_above_diagonal_kernel<<<grid_for(total, 256), 256, 0, stream>>>(scores, matrices, seq);
  CUDA_CHECK(cudaGetLastError());
}

namespace detail {
// Part `part` (0 Q, 1 K, 2 V) of sample b of qkv as a batch over heads of (seq, head_dim) matrices.
inline MatmulOperand qkv_part(ConstFloatPtr qkv, const AttentionShape& d, int64_t b, int part, bool transpose)
{
  const int64_t width = d.heads * d.head_dim, elem = qkv.bf16 ? 2 : 4;
  const char* base = static_cast<const char*>(qkv.p) + (b * 3 * width + part * width) * elem;
  return MatmulOperand{base, qkv.bf16, d.batch * 3 * width, d.head_dim, transpose};
}
inline MatmulOutput qkv_part_out(FloatPtr qkv, const AttentionShape& d, int64_t b, int part)
{
  const int64_t width = d.heads * d.head_dim, elem = qkv.bf16 ? 2 : 4;
  char* base = static_cast<char*>(qkv.p) + (b * 3 * width + part * width) * elem;
  return MatmulOutput{base, qkv.bf16, d.batch * 3 * width, d.head_dim};
}
inline int64_t score_offset_bytes(const AttentionShape& d, int64_t b, bool bf16)
{
  return b * d.heads * d.seq * d.seq * (bf16 ? 2 : 4);
}
} // namespace detail

// scores (batch, heads, seq, seq) = Q K^T / sqrt(head_dim) for j <= i, 0 above the diagonal.
inline void attention_scores_forward(MatmulContext& ctx, FloatPtr scores, ConstFloatPtr qkv, const AttentionShape& d,
                                     cudaStream_t stream)
{
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.head_dim));
  for (int64_t b = 0; b < d.batch; ++b) {
    MatmulOutput c{static_cast<char*>(scores.p) + detail::score_offset_bytes(d, b, scores.bf16), scores.bf16, d.seq,
                   d.seq * d.seq};
    matmul_forward(ctx, c, detail::qkv_part(qkv, d, b, 0, false), detail::qkv_part(qkv, d, b, 1, true), d.seq, d.seq,
                   d.head_dim, d.heads, scale, 0.0f, stream);
  }
  zero_above_diagonal(scores, d.batch * d.heads, d.seq, stream);
}

// The Q and K parts of d_qkv = dS K / sqrt(d) and dS^T Q / sqrt(d). REQUIRES: d_scores is 0 above the
// diagonal (as causal_softmax_backward writes it).
inline void attention_scores_backward(MatmulContext& ctx, FloatPtr d_qkv, ConstFloatPtr d_scores, ConstFloatPtr qkv,
                                      const AttentionShape& d, cudaStream_t stream)
{
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.head_dim));
  for (int64_t b = 0; b < d.batch; ++b) {
    const MatmulOperand ds{static_cast<const char*>(d_scores.p) + detail::score_offset_bytes(d, b, d_scores.bf16),
                           d_scores.bf16, d.seq, d.seq * d.seq, false};
    MatmulOperand ds_t = ds;
    ds_t.transpose = true;
    matmul_forward(ctx, detail::qkv_part_out(d_qkv, d, b, 0), ds, detail::qkv_part(qkv, d, b, 1, false), d.seq,
                   d.head_dim, d.seq, d.heads, scale, 0.0f, stream);
    matmul_forward(ctx, detail::qkv_part_out(d_qkv, d, b, 1), ds_t, detail::qkv_part(qkv, d, b, 0, false), d.seq,
                   d.head_dim, d.seq, d.heads, scale, 0.0f, stream);
  }
}

// context (seq, batch, heads * head_dim) = probs V. REQUIRES: probs is 0 above the diagonal.
inline void attention_context_forward(MatmulContext& ctx, FloatPtr context, ConstFloatPtr probs, ConstFloatPtr qkv,
                                      const AttentionShape& d, cudaStream_t stream)
{
  const int64_t width = d.heads * d.head_dim, elem = context.bf16 ? 2 : 4;
  for (int64_t b = 0; b < d.batch; ++b) {
    const MatmulOperand p{static_cast<const char*>(probs.p) + detail::score_offset_bytes(d, b, probs.bf16), probs.bf16,
                          d.seq, d.seq * d.seq, false};
    MatmulOutput c{static_cast<char*>(context.p) + b * width * elem, context.bf16, d.batch * width, d.head_dim};
    matmul_forward(ctx, c, p, detail::qkv_part(qkv, d, b, 2, false), d.seq, d.head_dim, d.seq, d.heads, 1.0f, 0.0f,
                   stream);
  }
}

// d_probs (batch, heads, seq, seq) = d_context V^T (0 above the diagonal); the V part of d_qkv = probs^T d_context.
inline void attention_context_backward(MatmulContext& ctx, FloatPtr d_probs, FloatPtr d_qkv, ConstFloatPtr d_context,
                                       ConstFloatPtr probs, ConstFloatPtr qkv, const AttentionShape& d,
                                       cudaStream_t stream)
{
  const int64_t width = d.heads * d.head_dim, elem = d_context.bf16 ? 2 : 4;
  for (int64_t b = 0; b < d.batch; ++b) {
    const MatmulOperand g{static_cast<const char*>(d_context.p) + b * width * elem, d_context.bf16, d.batch * width,
                          d.head_dim, false};
    MatmulOutput dp{static_cast<char*>(d_probs.p) + detail::score_offset_bytes(d, b, d_probs.bf16), d_probs.bf16, d.seq,
                    d.seq * d.seq};
    matmul_forward(ctx, dp, g, detail::qkv_part(qkv, d, b, 2, true), d.seq, d.seq, d.head_dim, d.heads, 1.0f, 0.0f,
                   stream);
    const MatmulOperand p_t{static_cast<const char*>(probs.p) + detail::score_offset_bytes(d, b, probs.bf16),
                            probs.bf16, d.seq, d.seq * d.seq, true};
    matmul_forward(ctx, detail::qkv_part_out(d_qkv, d, b, 2), p_t, g, d.seq, d.head_dim, d.seq, d.heads, 1.0f, 0.0f,
                   stream);
  }
  zero_above_diagonal(d_probs, d.batch * d.heads, d.seq, stream);
}

} // namespace gputwin::engine::cuda
