#pragma once
// The attention core without flash attention (Megatron-LM's unfused path): per sample, strided-batched
// cuBLASLt GEMMs over the heads, reading Q, K and V in place from qkv (seq, batch, (heads + 2 groups) head_dim)
// laid out [Q heads | K groups | V groups]; scores and probabilities are (batch, heads, seq, seq). Grouped-query
// attention (groups < heads): one batched GEMM per group over its query heads, its K or V read with batch stride
// 0; the gradients of K and V sum the group's heads in head order (GEMMs accumulating with beta = 1).

#include "cuda/ops/matmul.cuh"

#include <cmath>

namespace gputwin::engine::cuda {

struct AttentionShape {
  int64_t batch = 1, heads = 1, seq = 1, head_dim = 1;
  int64_t groups = 1; // K/V heads; = heads without grouped-query attention

  int64_t heads_per_group() const { return heads / groups; }
  int64_t width() const { return (heads + 2 * groups) * head_dim; } // of one token's qkv row
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
// Part `part` (0 Q, 1 K, 2 V) of sample b of qkv from head (Q) or group (K, V) `first`, as a batch of
// (seq, head_dim) matrices `batch_stride` elements apart (head_dim: consecutive heads; 0: one group repeated).
inline int64_t part_offset(const AttentionShape& d, int64_t b, int part, int64_t first)
{
  const int64_t start = part == 0 ? 0 : d.heads * d.head_dim + (part - 1) * d.groups * d.head_dim;
  return b * d.width() + start + first * d.head_dim;
}
inline MatmulOperand qkv_part(ConstFloatPtr qkv, const AttentionShape& d, int64_t b, int part, int64_t first,
                              int64_t batch_stride, bool transpose)
{
  const char* base = static_cast<const char*>(qkv.p) + part_offset(d, b, part, first) * (qkv.bf16 ? 2 : 4);
  return MatmulOperand{base, qkv.bf16, d.batch * d.width(), batch_stride, transpose};
}
inline MatmulOutput qkv_part_out(FloatPtr qkv, const AttentionShape& d, int64_t b, int part, int64_t first)
{
  char* base = static_cast<char*>(qkv.p) + part_offset(d, b, part, first) * (qkv.bf16 ? 2 : 4);
  return MatmulOutput{base, qkv.bf16, d.batch * d.width(), d.head_dim};
}
// The (seq, seq) matrices of sample b from head `head` on.
inline int64_t score_offset_bytes(const AttentionShape& d, int64_t b, int64_t head, bool bf16)
{
  return (b * d.heads + head) * d.seq * d.seq * (bf16 ? 2 : 4);
}
inline int64_t context_offset_bytes(const AttentionShape& d, int64_t b, int64_t head, bool bf16)
{
  return (b * d.heads + head) * d.head_dim * (bf16 ? 2 : 4);
}
// Calls fn(first head, heads, group, K/V batch stride) for the batched GEMMs over query heads of one sample:
// all heads at once without grouping (K/V of head j is group j), else one call per group.
template <typename Fn>
void for_each_head_batch(const AttentionShape& d, Fn&& fn)
{
  if (d.heads_per_group() == 1) {
    fn(int64_t{0}, d.heads, int64_t{0}, d.head_dim);
    return;
  }
  for (int64_t g = 0; g < d.groups; ++g)
    fn(g * d.heads_per_group(), d.heads_per_group(), g, int64_t{0});
}
} // namespace detail

// scores (batch, heads, seq, seq) = Q K^T / sqrt(head_dim) for j <= i, 0 above the diagonal.
inline void attention_scores_forward(MatmulContext& ctx, FloatPtr scores, ConstFloatPtr qkv, const AttentionShape& d,
                                     cudaStream_t stream)
{
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.head_dim));
  for (int64_t b = 0; b < d.batch; ++b)
    detail::for_each_head_batch(d, [&](int64_t head, int64_t count, int64_t group, int64_t kv_stride) {
      MatmulOutput c{static_cast<char*>(scores.p) + detail::score_offset_bytes(d, b, head, scores.bf16), scores.bf16,
                     d.seq, d.seq * d.seq};
      matmul_forward(ctx, c, detail::qkv_part(qkv, d, b, 0, head, d.head_dim, false),
                     detail::qkv_part(qkv, d, b, 1, group, kv_stride, true), d.seq, d.seq, d.head_dim, count, scale,
                     0.0f, stream);
    });
  zero_above_diagonal(scores, d.batch * d.heads, d.seq, stream);
}

// The gradient of K or V of each group of sample b: the sum over its query heads h of op(left_h) right_h, into
// part `part` of d_qkv. left_first_head: head 0's (seq, seq) matrix of sample b, the others follow; right_h: head
// h's (seq, head_dim) slice of the context gradient (right_is_context) or of Q in qkv. Without grouping one
// batched GEMM.
inline void group_gradient(MatmulContext& ctx, FloatPtr d_qkv, int part, const MatmulOperand& left_first_head,
                           ConstFloatPtr right, bool right_is_context, ConstFloatPtr qkv, const AttentionShape& d,
                           int64_t b, float alpha, cudaStream_t stream)
{
  const int64_t score_bytes = d.seq * d.seq * (left_first_head.bf16 ? 2 : 4);
  auto right_of = [&](int64_t head, int64_t stride) {
    if (right_is_context) {
      const char* base = static_cast<const char*>(right.p) + detail::context_offset_bytes(d, b, head, right.bf16);
      return MatmulOperand{base, right.bf16, d.batch * d.heads * d.head_dim, stride, false};
    }
    return detail::qkv_part(qkv, d, b, 0, head, stride, false);
  };
  if (d.heads_per_group() == 1) {
    matmul_forward(ctx, detail::qkv_part_out(d_qkv, d, b, part, 0), left_first_head, right_of(0, d.head_dim), d.seq,
                   d.head_dim, d.seq, d.heads, alpha, 0.0f, stream);
    return;
  }
  for (int64_t h = 0; h < d.heads; ++h) { // head order within each group: the CPU's summation order
    MatmulOperand left = left_first_head;
    left.p = static_cast<const char*>(left_first_head.p) + h * score_bytes;
    const bool first_of_group = h % d.heads_per_group() == 0;
    matmul_forward(ctx, detail::qkv_part_out(d_qkv, d, b, part, h / d.heads_per_group()), left, right_of(h, 0), d.seq,
                   d.head_dim, d.seq, 1, alpha, first_of_group ? 0.0f : 1.0f, stream);
  }
}

// The Q and K parts of d_qkv = dS K / sqrt(d) and (summed over each group's heads) dS^T Q / sqrt(d).
// REQUIRES: d_scores is 0 above the diagonal (as causal_softmax_backward writes it); d_qkv fp32 with groups.
inline void attention_scores_backward(MatmulContext& ctx, FloatPtr d_qkv, ConstFloatPtr d_scores, ConstFloatPtr qkv,
                                      const AttentionShape& d, cudaStream_t stream)
{
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.head_dim));
  for (int64_t b = 0; b < d.batch; ++b) {
    detail::for_each_head_batch(d, [&](int64_t head, int64_t count, int64_t group, int64_t kv_stride) {
      const MatmulOperand ds{static_cast<const char*>(d_scores.p) +
                                 detail::score_offset_bytes(d, b, head, d_scores.bf16),
                             d_scores.bf16, d.seq, d.seq * d.seq, false};
      matmul_forward(ctx, detail::qkv_part_out(d_qkv, d, b, 0, head), ds,
                     detail::qkv_part(qkv, d, b, 1, group, kv_stride, false), d.seq, d.head_dim, d.seq, count, scale,
                     0.0f, stream);
    });
    const MatmulOperand ds_t{static_cast<const char*>(d_scores.p) + detail::score_offset_bytes(d, b, 0, d_scores.bf16),
                             d_scores.bf16, d.seq, d.seq * d.seq, true};
    group_gradient(ctx, d_qkv, 1, ds_t, qkv, false, qkv, d, b, scale, stream);
  }
}

// context (seq, batch, heads * head_dim) = probs V. REQUIRES: probs is 0 above the diagonal.
inline void attention_context_forward(MatmulContext& ctx, FloatPtr context, ConstFloatPtr probs, ConstFloatPtr qkv,
                                      const AttentionShape& d, cudaStream_t stream)
{
  for (int64_t b = 0; b < d.batch; ++b)
    detail::for_each_head_batch(d, [&](int64_t head, int64_t count, int64_t group, int64_t kv_stride) {
      const MatmulOperand p{static_cast<const char*>(probs.p) + detail::score_offset_bytes(d, b, head, probs.bf16),
                            probs.bf16, d.seq, d.seq * d.seq, false};
      MatmulOutput c{static_cast<char*>(context.p) + detail::context_offset_bytes(d, b, head, context.bf16),
                     context.bf16, d.batch * d.heads * d.head_dim, d.head_dim};
      matmul_forward(ctx, c, p, detail::qkv_part(qkv, d, b, 2, group, kv_stride, false), d.seq, d.head_dim, d.seq,
                     count, 1.0f, 0.0f, stream);
    });
}

// d_probs (batch, heads, seq, seq) = d_context V^T (0 above the diagonal); the V part of d_qkv = probs^T d_context
// (summed over each group's heads).
inline void attention_context_backward(MatmulContext& ctx, FloatPtr d_probs, FloatPtr d_qkv, ConstFloatPtr d_context,
                                       ConstFloatPtr probs, ConstFloatPtr qkv, const AttentionShape& d,
                                       cudaStream_t stream)
{
  for (int64_t b = 0; b < d.batch; ++b) {
    detail::for_each_head_batch(d, [&](int64_t head, int64_t count, int64_t group, int64_t kv_stride) {
      const MatmulOperand g{static_cast<const char*>(d_context.p) +
                                detail::context_offset_bytes(d, b, head, d_context.bf16),
                            d_context.bf16, d.batch * d.heads * d.head_dim, d.head_dim, false};
      MatmulOutput dp{static_cast<char*>(d_probs.p) + detail::score_offset_bytes(d, b, head, d_probs.bf16),
                      d_probs.bf16, d.seq, d.seq * d.seq};
      matmul_forward(ctx, dp, g, detail::qkv_part(qkv, d, b, 2, group, kv_stride, true), d.seq, d.seq, d.head_dim,
                     count, 1.0f, 0.0f, stream);
    });
    const MatmulOperand p_t{static_cast<const char*>(probs.p) + detail::score_offset_bytes(d, b, 0, probs.bf16),
                            probs.bf16, d.seq, d.seq * d.seq, true};
    group_gradient(ctx, d_qkv, 2, p_t, d_context, true, qkv, d, b, 1.0f, stream);
  }
  zero_above_diagonal(d_probs, d.batch * d.heads, d.seq, stream);
}

} // namespace gputwin::engine::cuda
