#include "gputwin/engine/train/mixed_precision_adam.hpp"

namespace gputwin::engine {

MixedPrecisionAdam::MixedPrecisionAdam(RankContext& ctx, ParameterStore& store, const std::vector<float>& master)
    : ctx_(ctx), store_(store)
{
  const int64_t padded = store.weights().numel();
  const bool sharded = ctx.plan.zero_stage == 1;
  shard_elements_ = sharded ? padded / ctx.plan.dp : padded;
  shard_offset_ = sharded ? ctx.coords.dp * shard_elements_ : 0;
  master_ = ctx.tensor(MemoryPurpose::Optimizer, DType::F32, {shard_elements_});
  momentum_ = ctx.tensor(MemoryPurpose::Optimizer, DType::F32, {shard_elements_});
  variance_ = ctx.tensor(MemoryPurpose::Optimizer, DType::F32, {shard_elements_});
  ctx.backend.upload(master_, master.data() + shard_offset_, shard_elements_ * static_cast<int64_t>(sizeof(float)));
  if (sharded)
    grad_shard_ = ctx.tensor(MemoryPurpose::Workspace, DType::F32, {shard_elements_});
}

void MixedPrecisionAdam::reduce_gradients()
{
  ctx_.set_context(traces::Phase::Optimizer, -1, -1, 0);
  if (ctx_.sequence_parallel())
    all_reduce_sp_partial_gradients();
  // The tied output layer's copy of the word embedding on the last stage; untied, the output layer has its own
  // matrix and nothing is exchanged (nor does the generator emit it).
  if (ctx_.embedding.valid() && ctx_.model.tie_embeddings)
    if (Parameter* word = store_.find("embedding.word"))
      ctx_.embedding.all_reduce(word->grad, word->numel(), ReduceOp::Sum, op_name(OpName::EmbeddingGradAllReduce));
  Tensor& grads = store_.grads();
  if (ctx_.plan.zero_stage == 1 && ctx_.dp.size() > 1)
    ctx_.dp.reduce_scatter(grads, grad_shard_, shard_elements_, op_name(OpName::DpReduceScatter));
  else if (ctx_.plan.zero_stage == 1)
    ctx_.backend.copy(grad_shard_, grads, shard_elements_);
  else if (!ctx_.model.moe.enabled())
    ctx_.dp.all_reduce(grads, grads.numel(), ReduceOp::Sum, op_name(OpName::DpAllReduce));
  else
    reduce_dense_and_expert_gradients();
}

// Mixture of experts (ZeRO-0): the dense gradients over dp, then the experts' over the expert data-parallel group
// (Megatron-Core's DDP: the dense buffers' bucket groups, then the expert-parallel ones).
void MixedPrecisionAdam::reduce_dense_and_expert_gradients()
{
  Tensor& grads = store_.grads();
  const int64_t dense = store_.dense_elements();
  Tensor dense_grads = grads.view(0, {dense});
  ctx_.dp.all_reduce(dense_grads, dense, ReduceOp::Sum, op_name(OpName::DpAllReduce));
  const int64_t experts = store_.total_elements() - dense;
  if (experts > 0) {
    Tensor expert_grads = grads.view(dense, {experts});
    ctx_.edp.all_reduce(expert_grads, experts, ReduceOp::Sum, op_name(OpName::EdpAllReduce));
  }
}

void MixedPrecisionAdam::all_reduce_sp_partial_gradients()
{
  // One coalesced all-reduce of every partial gradient, as Megatron-LM's finalize_model_grads does: packed into
  // one buffer, summed, unpacked (the same sums, element by element, as one all-reduce per parameter).
  int64_t total = 0;
  for (const Parameter& p : store_.parameters())
    if (p.spec.partial_under_sp)
      total += p.numel();
  if (total == 0)
    return;
  Tensor packed = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {total});
  int64_t offset = 0;
  for (Parameter& p : store_.parameters())
    if (p.spec.partial_under_sp) {
      Tensor slot = packed.view(offset, {p.numel()});
      ctx_.backend.copy(slot, p.grad, p.numel());
      offset += p.numel();
    }
  ctx_.tp.all_reduce(packed, total, ReduceOp::Sum, op_name(OpName::SpGradAllReduce));
  offset = 0;
  for (Parameter& p : store_.parameters())
    if (p.spec.partial_under_sp) {
      const Tensor slot = packed.view(offset, {p.numel()});
      ctx_.backend.copy(p.grad, slot, p.numel());
      offset += p.numel();
    }
}

void MixedPrecisionAdam::step()
{
  ++step_;
  ctx_.set_context(traces::Phase::Optimizer, -1, -1, 0);
  const Tensor& grad = ctx_.plan.zero_stage == 1 ? grad_shard_ : store_.grads();
  Tensor& weights = store_.weights();
  const bool sharded = ctx_.plan.zero_stage == 1;
  Tensor shard = sharded ? ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {shard_elements_}) : Tensor{};
  // One op as Megatron's fused Adam that also writes the bf16 weights (two kernels here).
  ctx_.compute(OpName::OptimizerAdam, optimizer_cost(static_cast<double>(shard_elements_)), [&] {
    ctx_.backend.adam_step(master_, momentum_, variance_, grad, shard_elements_, ctx_.options.adam, step_);
    ctx_.backend.copy(sharded ? shard : weights, master_, shard_elements_);
  });
  if (sharded)
    ctx_.dp.all_gather(shard, weights, shard_elements_, op_name(OpName::DpAllGather));
}

void MixedPrecisionAdam::zero_gradients()
{
  ctx_.backend.zero(store_.grads());
}

} // namespace gputwin::engine
