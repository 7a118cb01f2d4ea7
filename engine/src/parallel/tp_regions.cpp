#include "gputwin/engine/parallel/tp_regions.hpp"

namespace gputwin::engine {

void copy_to_tensor_parallel_region_backward(RankContext& ctx, Tensor& grad, int64_t rows, int64_t cols,
                                             const std::string& name)
{
  ctx.tp.all_reduce(grad, rows * cols, ReduceOp::Sum, name);
}

void reduce_from_tensor_parallel_region_forward(RankContext& ctx, Tensor& partial, int64_t rows, int64_t cols,
                                                const std::string& name)
{
  ctx.tp.all_reduce(partial, rows * cols, ReduceOp::Sum, name);
}

Tensor gather_from_sequence_parallel_region_forward(RankContext& ctx, const Tensor& shard, int64_t cols,
                                                    const std::string& name)
{
  Tensor full = ctx.tensor(MemoryPurpose::Workspace, shard.dtype(), {ctx.seq(), ctx.batch(), cols});
  ctx.tp.all_gather(shard, full, ctx.rows_local() * cols, name);
  return full;
}

Tensor gather_from_sequence_parallel_region_backward(RankContext& ctx, const Tensor& grad_full, int64_t cols,
                                                     const std::string& name)
{
  Tensor shard = ctx.tensor(MemoryPurpose::Workspace, DType::F32, {ctx.seq_local(), ctx.batch(), cols});
  ctx.tp.reduce_scatter(grad_full, shard, ctx.rows_local() * cols, name);
  return shard;
}

Tensor reduce_scatter_to_sequence_parallel_region_forward(RankContext& ctx, const Tensor& partial_full, int64_t cols,
                                                          const std::string& name)
{
  Tensor shard = ctx.tensor(MemoryPurpose::Workspace, partial_full.dtype(), {ctx.seq_local(), ctx.batch(), cols});
  ctx.tp.reduce_scatter(partial_full, shard, ctx.rows_local() * cols, name);
  return shard;
}

Tensor reduce_scatter_to_sequence_parallel_region_backward(RankContext& ctx, const Tensor& grad_shard, int64_t cols,
                                                           const std::string& name)
{
  Tensor full = ctx.tensor(MemoryPurpose::Workspace, DType::F32, {ctx.seq(), ctx.batch(), cols});
  ctx.tp.all_gather(grad_shard, full, ctx.rows_local() * cols, name);
  return full;
}

} // namespace gputwin::engine
