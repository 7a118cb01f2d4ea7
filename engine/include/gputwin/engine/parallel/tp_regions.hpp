#pragma once
// The conjugate communication operators of tensor and sequence parallelism (Shoeybi et al. 2019, Section 3;
// Korthikanti et al. 2022, Section 4.2.2), named by region and direction as Megatron-LM's mappings.py.
// Activations are (seq, batch, cols) row-major, so a sequence shard is a contiguous block of rows.
// Forward tensors are bf16 activations or fp32 partial sums; backward tensors are fp32 gradients.

#include "gputwin/engine/parallel/rank_context.hpp"

#include <string>

namespace gputwin::engine {

// f: forward identity; backward all-reduce of the input gradient (rows, cols) over the tp group, in place.
void copy_to_tensor_parallel_region_backward(RankContext& ctx, Tensor& grad, int64_t rows, int64_t cols,
                                             const std::string& name);

// f-bar: forward all-reduce of the row-parallel partial outputs (rows, cols), in place; backward identity.
void reduce_from_tensor_parallel_region_forward(RankContext& ctx, Tensor& partial, int64_t rows, int64_t cols,
                                                const std::string& name);

// g: forward all-gather of this rank's sequence shard (s/t, b, cols) into (s, b, cols) (Workspace, same type).
Tensor gather_from_sequence_parallel_region_forward(RankContext& ctx, const Tensor& shard, int64_t cols,
                                                    const std::string& name);
// g backward: reduce-scatter of the full gradient (s, b, cols) into this rank's shard (s/t, b, cols), f32.
Tensor gather_from_sequence_parallel_region_backward(RankContext& ctx, const Tensor& grad_full, int64_t cols,
                                                     const std::string& name);

// g-bar: forward reduce-scatter of partial outputs (s, b, cols) into the shard (s/t, b, cols) (Workspace).
Tensor reduce_scatter_to_sequence_parallel_region_forward(RankContext& ctx, const Tensor& partial_full, int64_t cols,
                                                          const std::string& name);
// g-bar backward: all-gather of the shard's gradient (s/t, b, cols) into (s, b, cols), f32.
Tensor reduce_scatter_to_sequence_parallel_region_backward(RankContext& ctx, const Tensor& grad_shard, int64_t cols,
                                                           const std::string& name);

} // namespace gputwin::engine
