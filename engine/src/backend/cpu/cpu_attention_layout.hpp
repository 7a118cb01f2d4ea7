#pragma once
// Where one (sample, head) of Q, K, V and of the context lives in the attention core's tensors, shared by the
// unfused and the fused CPU attention kernels: qkv (seq, batch, 3 heads head_dim) [Q heads | K heads | V heads],
// context (seq, batch, heads head_dim).
#include "cpu_access.hpp"
#include "gputwin/engine/backend/backend.hpp"

namespace gputwin::engine::cpu {

// Element (token i, sample, head, 0) of part 0 (Q), 1 (K) or 2 (V) of qkv.
inline int64_t qkv_index(const AttentionDims& d, int64_t i, int64_t sample, int64_t head, int part)
{
  const int64_t width = d.heads * d.head_dim;
  return (i * d.batch + sample) * 3 * width + part * width + head * d.head_dim;
}

// Element (token i, sample, head, 0) of the context (or its gradient).
inline int64_t context_index(const AttentionDims& d, int64_t i, int64_t sample, int64_t head)
{
  return (i * d.batch + sample) * d.heads * d.head_dim + head * d.head_dim;
}

// Copies part `part` of one (sample, head) into out (seq x head_dim), as product operands (bf16 values).
inline void gather_head(const Tensor& qkv, const AttentionDims& d, int64_t sample, int64_t head, int part, float* out)
{
  for (int64_t i = 0; i < d.seq; ++i)
    load_operand_row(qkv, qkv_index(d, i, sample, head, part), d.head_dim, out + i * d.head_dim);
}

inline void scatter_head(Tensor& d_qkv, const AttentionDims& d, int64_t sample, int64_t head, int part,
                         const float* in)
{
  for (int64_t i = 0; i < d.seq; ++i)
    store_row(d_qkv, qkv_index(d, i, sample, head, part), d.head_dim, in + i * d.head_dim);
}

} // namespace gputwin::engine::cpu
