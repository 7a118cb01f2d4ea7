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
    for (Parameter& p : store_.parameters())
      if (p.spec.partial_under_sp)
        ctx_.tp.all_reduce(p.grad, p.numel(), ReduceOp::Sum, "grad.sp.all_reduce");
  if (ctx_.embedding.valid())
    if (Parameter* word = store_.find("embedding.word"))
      ctx_.embedding.all_reduce(word->grad, word->numel(), ReduceOp::Sum, "grad.embedding.all_reduce");
  Tensor& grads = store_.grads();
  if (ctx_.plan.zero_stage == 1 && ctx_.dp.size() > 1)
    ctx_.dp.reduce_scatter(grads, grad_shard_, shard_elements_, "grad.dp.reduce_scatter");
  else if (ctx_.plan.zero_stage == 1)
    ctx_.backend.copy(grad_shard_, grads, shard_elements_);
  else
    ctx_.dp.all_reduce(grads, grads.numel(), ReduceOp::Sum, "grad.dp.all_reduce");
}

void MixedPrecisionAdam::step()
{
  ++step_;
  ctx_.set_context(traces::Phase::Optimizer, -1, -1, 0);
  const Tensor& grad = ctx_.plan.zero_stage == 1 ? grad_shard_ : store_.grads();
  ctx_.compute("adam", 10.0 * static_cast<double>(shard_elements_), static_cast<double>(shard_elements_ * 4 * 7),
               traces::GemmShape{}, [&] {
                 ctx_.backend.adam_step(master_, momentum_, variance_, grad, shard_elements_, ctx_.options.adam, step_);
               });
  Tensor& weights = store_.weights();
  if (ctx_.plan.zero_stage == 1) {
    Tensor shard = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {shard_elements_});
    ctx_.compute("adam.cast", static_cast<double>(shard_elements_ * 6),
                 [&] { ctx_.backend.copy(shard, master_, shard_elements_); });
    ctx_.dp.all_gather(shard, weights, shard_elements_, "weights.dp.all_gather");
  } else {
    ctx_.compute("adam.cast", static_cast<double>(shard_elements_ * 6),
                 [&] { ctx_.backend.copy(weights, master_, shard_elements_); });
  }
}

void MixedPrecisionAdam::zero_gradients()
{
  ctx_.backend.zero(store_.grads());
}

} // namespace gputwin::engine
