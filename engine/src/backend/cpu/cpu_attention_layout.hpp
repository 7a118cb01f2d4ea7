#pragma once
// Where one (sample, head) of Q, K, V and of the context lives in the attention core's tensors, shared by the
// unfused and the fused CPU attention kernels: qkv (seq, batch, (heads + 2 groups) head_dim) [Q heads | K groups |
// V groups], context (seq, batch, heads head_dim). Grouped-query attention: query head j reads K/V group
// dims.group_of(j).
#include "cpu_access.hpp"
#include "gputwin/engine/backend/backend.hpp"

namespace gputwin::engine::cpu {

// Element (token i, sample, head, 0) of part 0 (Q; `head` a query head) or 1 (K), 2 (V) (`head` a K/V group).
inline int64_t qkv_index(const AttentionDims& d, int64_t i, int64_t sample, int64_t head, int part)
{
  const int64_t q_width = d.heads * d.head_dim, kv_width = d.groups() * d.head_dim;
  const int64_t part_start = part == 0 ? 0 : q_width + (part - 1) * kv_width;
  return (i * d.batch + sample) * d.qkv_width() + part_start + head * d.head_dim;
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

// Stores `in` as part `part` of one (sample, head); scatter_head of K or V (a group's gradient) is called once
// per group, with the sum over the group's query heads.
inline void scatter_head(Tensor& d_qkv, const AttentionDims& d, int64_t sample, int64_t head, int part,
                         const float* in)
{
  for (int64_t i = 0; i < d.seq; ++i)
    store_row(d_qkv, qkv_index(d, i, sample, head, part), d.head_dim, in + i * d.head_dim);
}

} // namespace gputwin::engine::cpu
