#include "gputwin/engine/backend/counter_rng.hpp"
#include "gputwin/engine/backend/host_access.hpp"
#include "gputwin/engine/model/gpt_edges.hpp"
#include "gputwin/engine/parallel/tp_regions.hpp"

namespace gputwin::engine {

GptEmbedding::GptEmbedding(RankContext& ctx, ParameterStore& store) : ctx_(ctx)
{
  word_ = &store.add(ctx, word_embedding_spec(ctx));
  position_ = ctx.model.position == PositionEmbedding::Learned
                  ? &store.add(ctx, ParameterSpec{"embedding.position", ctx.seq(), ctx.hidden(), Sharding{-1, 1},
                                                  ParameterInit::Normal, true})
                  : nullptr; // RoPE: positions enter every layer's attention instead
}

Tensor GptEmbedding::position_ids(int64_t first, int64_t rows) const
{
  Tensor ids = ctx_.tensor(MemoryPurpose::Workspace, DType::I32, {rows, ctx_.batch()});
  std::vector<int32_t> values(static_cast<size_t>(rows * ctx_.batch()));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t b = 0; b < ctx_.batch(); ++b)
      values[static_cast<size_t>(i * ctx_.batch() + b)] = static_cast<int32_t>(first + i);
  upload(ctx_.backend, ids, values);
  return ids;
}

Tensor GptEmbedding::forward(Tensor tokens, int64_t micro_batch, EmbeddingSaved& saved)
{
  const int64_t h = ctx_.hidden(), rows = ctx_.rows_full();
  OpContext c = ctx_.tracer.context();
  ctx_.set_context(traces::Phase::Forward, -1, c.micro_batch, c.chunk);
  saved.tokens = std::move(tokens);
  saved.tokens.retag(MemoryPurpose::EdgeActivations);

  // Each rank looks up the tokens of its vocabulary slice; the others read 0. The learned positions are added by
  // tp rank 0 alone before the reduction, so every token's sum has at most two non-zero terms, each bf16: the
  // reduction's one fp32 sum rounded to bf16 is the single rank's word + position exactly (and with dropout
  // off, the generator has no op after the reduction to add them in).
  Tensor word = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {ctx_.seq(), ctx_.batch(), h});
  ctx_.compute(OpName::EmbeddingFwd, [&] {
    ctx_.backend.embedding_forward(word, saved.tokens, word_->weight, ctx_.vocab_start(), ctx_.vocab_owned(), rows, h);
    if (position_ && ctx_.coords.tp == 0) {
      const Tensor ids = position_ids(0, ctx_.seq());
      Tensor pos = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {rows, h});
      ctx_.backend.embedding_forward(pos, ids, position_->weight, 0, ctx_.seq(), rows, h);
      ctx_.backend.add(word, word, pos, rows * h);
    }
  });
  Tensor summed;
  if (ctx_.sequence_parallel()) {
    summed = reduce_scatter_to_sequence_parallel_region_forward(ctx_, word, h, op_name(OpName::TpReduceScatter));
  } else {
    reduce_from_tensor_parallel_region_forward(ctx_, word, rows, h, op_name(OpName::TpAllReduce));
    summed = std::move(word);
  }
  if (!ctx_.model.dropout) {
    ctx_.set_context(c.phase, c.layer, c.micro_batch, c.chunk);
    return summed;
  }
  Tensor x = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {ctx_.seq_local(), ctx_.batch(), h});
  saved.dropout_mask = ctx_.tensor(MemoryPurpose::EdgeActivations, DType::U8, {ctx_.seq_local(), ctx_.batch(), h});
  DropoutSite dropout;
  dropout.key = dropout_key(ctx_.options.seed, ctx_.iteration, -1, DropoutSiteKind::Embedding);
  dropout.probability = ctx_.options.dropout;
  dropout.local_dims = {ctx_.seq_local(), ctx_.batch(), h, 1};
  dropout.offsets = {ctx_.seq_offset(), ctx_.sample_in_iteration(micro_batch), 0, 0};
  dropout.global_dims = {ctx_.seq(), ctx_.plan.effective_global_batch(), h, 1};
  ctx_.compute(OpName::EmbeddingDropoutFwd,
               [&] { ctx_.backend.dropout_forward(x, saved.dropout_mask, summed, dropout); });
  ctx_.set_context(c.phase, c.layer, c.micro_batch, c.chunk);
  return x;
}

void GptEmbedding::backward(const Tensor& d_x, EmbeddingSaved& saved)
{
  const int64_t h = ctx_.hidden(), rows = ctx_.rows_full(), rows_l = ctx_.rows_local();
  OpContext c = ctx_.tracer.context();
  ctx_.set_context(traces::Phase::Backward, -1, c.micro_batch, c.chunk);
  Tensor d_sum;
  if (ctx_.model.dropout) {
    d_sum = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {ctx_.seq_local(), ctx_.batch(), h});
    ctx_.compute(OpName::EmbeddingDropoutBwd,
                 [&] { ctx_.backend.dropout_backward(d_sum, d_x, saved.dropout_mask, ctx_.options.dropout); });
  } else {
    d_sum = d_x.view(0, d_x.shape());
  }
  const Tensor d_word =
      ctx_.sequence_parallel()
          ? reduce_scatter_to_sequence_parallel_region_backward(ctx_, d_sum, h, op_name(OpName::TpAllGather))
          : d_sum.view(0, d_sum.shape());
  ctx_.compute(OpName::EmbeddingWgrad, [&] {
    ctx_.backend.embedding_backward(word_->grad, d_word, saved.tokens, ctx_.vocab_start(), ctx_.vocab_owned(), rows, h);
    // The positions' gradient from this rank's rows (with SP a partial sum, completed by tp.sp_grad.all_reduce).
    if (position_) {
      const Tensor ids = position_ids(ctx_.seq_offset(), ctx_.seq_local());
      ctx_.backend.embedding_backward(position_->grad, d_sum, ids, 0, ctx_.seq(), rows_l, h);
    }
  });
  saved = EmbeddingSaved{};
  ctx_.set_context(c.phase, c.layer, c.micro_batch, c.chunk);
}

} // namespace gputwin::engine
