// The transformer layer's parameters, forward pass and the helpers its backward shares.
#include "gputwin/engine/model/transformer_layer.hpp"

#include "gputwin/engine/backend/counter_rng.hpp"
#include "gputwin/engine/parallel/tp_regions.hpp"
#include "gputwin/models/flash_attention_cost.hpp"

namespace gputwin::engine {

namespace {

void keep(Tensor& t)
{
  if (t.defined())
    t.retag(MemoryPurpose::LayerActivations);
}

} // namespace

int64_t LayerActivations::bytes() const
{
  int64_t total = 0;
  for (const Tensor* t : {&x, &ln1, &qkv, &probs, &attn_mask, &probs_dropped, &lse, &rng_state, &context, &drop1_mask,
                          &r1, &ln2, &fc1_out, &gelu_out, &drop2_mask})
    total += t->bytes();
  return total;
}

TransformerLayer::TransformerLayer(RankContext& ctx, ParameterStore& store, int64_t layer) : ctx_(ctx), layer_(layer)
{
  const int64_t h = ctx.hidden();
  const std::string p = "layers." + std::to_string(layer) + ".";
  const Sharding replicated{-1, 1}, columns{1, 1}, qkv_columns{1, 3}, rows{0, 1};
  auto add = [&](const std::string& name, int64_t r, int64_t c, Sharding s, ParameterInit init, bool partial) {
    return &store.add(ctx, ParameterSpec{p + name, r, c, s, init, partial});
  };
  ln1_gamma_ = add("ln1.gamma", 1, h, replicated, ParameterInit::Ones, true);
  ln1_beta_ = add("ln1.beta", 1, h, replicated, ParameterInit::Zeros, true);
  qkv_weight_ = add("qkv.weight", h, 3 * h, qkv_columns, ParameterInit::Normal, false);
  qkv_bias_ = add("qkv.bias", 1, 3 * h, qkv_columns, ParameterInit::Zeros, false);
  proj_weight_ = add("proj.weight", h, h, rows, ParameterInit::ScaledNormal, false);
  proj_bias_ = add("proj.bias", 1, h, replicated, ParameterInit::Zeros, true);
  ln2_gamma_ = add("ln2.gamma", 1, h, replicated, ParameterInit::Ones, true);
  ln2_beta_ = add("ln2.beta", 1, h, replicated, ParameterInit::Zeros, true);
  fc1_weight_ = add("fc1.weight", h, 4 * h, columns, ParameterInit::Normal, false);
  fc1_bias_ = add("fc1.bias", 1, 4 * h, columns, ParameterInit::Zeros, false);
  fc2_weight_ = add("fc2.weight", 4 * h, h, rows, ParameterInit::ScaledNormal, false);
  fc2_bias_ = add("fc2.bias", 1, h, replicated, ParameterInit::Zeros, true);
}

void TransformerLayer::gemm(OpName name, Tensor& c, const Tensor& a, bool ta, const Tensor& b, bool tb, int64_t m,
                            int64_t n, int64_t k, float beta)
{
  ctx_.compute(name, [&] { ctx_.backend.gemm(c, a, ta, b, tb, m, n, k, 1.0f, beta); });
}

Tensor TransformerLayer::column_parallel_input(const Tensor& ln_out)
{
  if (ctx_.sequence_parallel())
    return gather_from_sequence_parallel_region_forward(ctx_, ln_out, ctx_.hidden(), op_name(OpName::TpAllGather));
  return ln_out.view(0, ln_out.shape()); // f: identity forward
}

Tensor TransformerLayer::row_parallel_output_grad(const Tensor& d_out)
{
  if (ctx_.sequence_parallel())
    return reduce_scatter_to_sequence_parallel_region_backward(ctx_, d_out, ctx_.hidden(), op_name(OpName::TpAllGather));
  return d_out.view(0, d_out.shape()); // f-bar: identity backward
}

Tensor TransformerLayer::column_parallel_input_grad(Tensor d_in_partial)
{
  if (ctx_.sequence_parallel())
    return gather_from_sequence_parallel_region_backward(ctx_, d_in_partial, ctx_.hidden(),
                                                         op_name(OpName::TpReduceScatter));
  copy_to_tensor_parallel_region_backward(ctx_, d_in_partial, ctx_.rows_full(), ctx_.hidden(),
                                          op_name(OpName::TpAllReduce));
  return d_in_partial;
}

Tensor TransformerLayer::bias_dropout_residual(Tensor partial_full, const Parameter& bias, const Tensor& residual,
                                               Tensor& mask, int64_t micro_batch, int site)
{
  const int64_t h = ctx_.hidden(), rows = ctx_.rows_local();
  Tensor out;
  if (ctx_.sequence_parallel()) {
    out = reduce_scatter_to_sequence_parallel_region_forward(ctx_, partial_full, h, op_name(OpName::TpReduceScatter));
  } else {
    reduce_from_tensor_parallel_region_forward(ctx_, partial_full, rows, h, op_name(OpName::TpAllReduce));
    out = std::move(partial_full);
  }
  mask = ctx_.tensor(MemoryPurpose::Workspace, DType::U8, {ctx_.seq_local(), ctx_.batch(), h});
  Tensor y = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {ctx_.seq_local(), ctx_.batch(), h});
  DropoutSite dropout;
  dropout.key = dropout_key(ctx_.options.seed, ctx_.iteration, layer_, static_cast<DropoutSiteKind>(site));
  dropout.probability = ctx_.options.dropout;
  dropout.local_dims = {ctx_.seq_local(), ctx_.batch(), h, 1};
  dropout.offsets = {ctx_.seq_offset(), ctx_.sample_in_iteration(micro_batch), 0, 0};
  dropout.global_dims = {ctx_.seq(), ctx_.plan.effective_global_batch(), h, 1};
  ctx_.compute(OpName::DropoutAddFwd, [&] {
    ctx_.backend.add_bias(out, out, bias.weight, rows, h);
    Tensor dropped = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {rows, h});
    ctx_.backend.dropout_forward(dropped, mask, out, dropout);
    ctx_.backend.add(y, residual, dropped, rows * h);
  });
  return y;
}

DropoutSite TransformerLayer::attention_dropout_site(int64_t micro_batch) const
{
  const int64_t b = ctx_.batch(), a = ctx_.heads_local(), s = ctx_.seq();
  DropoutSite dropout;
  dropout.key = dropout_key(ctx_.options.seed, ctx_.iteration, layer_, DropoutSiteKind::AttentionProbs);
  dropout.probability = ctx_.options.dropout;
  dropout.local_dims = {b, a, s, s};
  dropout.offsets = {ctx_.sample_in_iteration(micro_batch), ctx_.head_offset(), 0, 0};
  dropout.global_dims = {ctx_.plan.effective_global_batch(), ctx_.model.heads, s, s};
  return dropout;
}

void TransformerLayer::attention_core_forward(LayerActivations& acts, int64_t micro_batch)
{
  const AttentionDims dims{ctx_.batch(), ctx_.heads_local(), ctx_.seq(), ctx_.model.head_dim()};
  const int64_t b = dims.batch, a = dims.heads, s = dims.seq, d = dims.head_dim;
  if (ctx_.plan.attention == AttentionKernel::Flash) {
    // One fused kernel: nothing (s, s) is kept, only the log-sum-exp and the dropout RNG state.
    acts.context = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {s, b, a * d});
    acts.lse = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {b, a, s});
    acts.rng_state = ctx_.tensor(MemoryPurpose::Workspace, DType::I32, {4});
    // The backend's own tile (op_vocabulary.hpp, "Where the engine differs").
    const FusedAttentionCost cost =
        flash_attention_forward_cost(b * a, s, d, ctx_.backend.fused_attention_tile_tokens());
    const DropoutSite dropout = attention_dropout_site(micro_batch);
    ctx_.compute(OpName::AttnFlashFwd, OpCost{cost.flops, cost.bytes, cost.shape}, [&] {
      ctx_.backend.flash_attention_forward(acts.context, acts.lse, acts.rng_state, acts.qkv, dims, dropout);
    });
    return;
  }
  Tensor scores = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {b, a, s, s});
  acts.probs = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {b, a, s, s});
  acts.attn_mask = ctx_.tensor(MemoryPurpose::Workspace, DType::U8, {b, a, s, s});
  acts.probs_dropped = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {b, a, s, s});
  // Q K^T over every (sample, head): a batched GEMM (s x s x d).
  ctx_.compute(OpName::AttnScoresFwd, [&] { ctx_.backend.attention_scores_forward(scores, acts.qkv, dims); });
  ctx_.compute(OpName::AttnSoftmaxFwd, [&] { ctx_.backend.causal_softmax_forward(acts.probs, scores, b * a * s, s); });
  const DropoutSite dropout = attention_dropout_site(micro_batch);
  ctx_.compute(OpName::AttnDropoutFwd,
               [&] { ctx_.backend.dropout_forward(acts.probs_dropped, acts.attn_mask, acts.probs, dropout); });
  // Selective recompute reruns this too (Megatron checkpoints the whole core attention); the result equals the
  // context kept from the forward pass, which backward's proj.wgrad has already used.
  acts.context = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {s, b, a * d});
  ctx_.compute(OpName::AttnContextFwd,
               [&] { ctx_.backend.attention_context_forward(acts.context, acts.probs_dropped, acts.qkv, dims); });
}

Tensor TransformerLayer::run_forward(LayerActivations& acts, int64_t micro_batch)
{
  const int64_t h = ctx_.hidden(), rows_l = ctx_.rows_local(), rows = ctx_.rows_full();
  const int64_t qkv_cols = 3 * ctx_.hidden_local(), ffn = ctx_.ffn_local();
  const float eps = ctx_.options.layernorm_epsilon;
  const std::vector<int64_t> residual_shape{ctx_.seq_local(), ctx_.batch(), h};

  acts.ln1 = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, residual_shape);
  ctx_.compute(OpName::Ln1Fwd, [&] {
    ctx_.backend.layernorm_forward(acts.ln1, acts.x, ln1_gamma_->weight, ln1_beta_->weight, rows_l, h, eps);
  });
  {
    const Tensor a_in = column_parallel_input(acts.ln1);
    Tensor qkv_f32 = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {rows, qkv_cols});
    acts.qkv = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {ctx_.seq(), ctx_.batch(), qkv_cols});
    // One op as Megatron's GEMM with its bias epilogue: the backends add the bias in a second kernel.
    ctx_.compute(OpName::QkvFwd, [&] {
      ctx_.backend.gemm(qkv_f32, a_in, false, qkv_weight_->weight, false, rows, qkv_cols, h, 1.0f, 0.0f);
      ctx_.backend.add_bias(acts.qkv, qkv_f32, qkv_bias_->weight, rows, qkv_cols);
    });
  }
  attention_core_forward(acts, micro_batch);

  Tensor proj_partial = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {ctx_.seq(), ctx_.batch(), h});
  gemm(OpName::ProjFwd, proj_partial, acts.context, false, proj_weight_->weight, false, rows, h, ctx_.hidden_local(),
       0.0f);
  acts.r1 = bias_dropout_residual(std::move(proj_partial), *proj_bias_, acts.x, acts.drop1_mask, micro_batch,
                                  static_cast<int>(DropoutSiteKind::AttentionOutput));

  acts.ln2 = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, residual_shape);
  ctx_.compute(OpName::Ln2Fwd, [&] {
    ctx_.backend.layernorm_forward(acts.ln2, acts.r1, ln2_gamma_->weight, ln2_beta_->weight, rows_l, h, eps);
  });
  {
    const Tensor m_in = column_parallel_input(acts.ln2);
    Tensor fc1_f32 = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {rows, ffn});
    gemm(OpName::Fc1Fwd, fc1_f32, m_in, false, fc1_weight_->weight, false, rows, ffn, h, 0.0f);
    acts.fc1_out = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {ctx_.seq(), ctx_.batch(), ffn});
    acts.gelu_out = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {ctx_.seq(), ctx_.batch(), ffn});
    // Megatron's fused bias + GeLU: one op (two kernels here).
    ctx_.compute(OpName::GeluFwd, [&] {
      ctx_.backend.add_bias(acts.fc1_out, fc1_f32, fc1_bias_->weight, rows, ffn);
      ctx_.backend.gelu_forward(acts.gelu_out, acts.fc1_out, rows * ffn);
    });
  }
  Tensor fc2_partial = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {ctx_.seq(), ctx_.batch(), h});
  gemm(OpName::Fc2Fwd, fc2_partial, acts.gelu_out, false, fc2_weight_->weight, false, rows, h, ffn, 0.0f);
  return bias_dropout_residual(std::move(fc2_partial), *fc2_bias_, acts.r1, acts.drop2_mask, micro_batch,
                               static_cast<int>(DropoutSiteKind::MlpOutput));
}

Tensor TransformerLayer::forward(Tensor x, int64_t micro_batch, LayerActivations& saved)
{
  OpContext c = ctx_.tracer.context();
  ctx_.set_context(traces::Phase::Forward, static_cast<int32_t>(layer_), c.micro_batch, c.chunk);
  saved = LayerActivations{};
  saved.x = std::move(x);
  Tensor y = run_forward(saved, micro_batch);
  // Keep what backward needs under this plan's recompute mode (Korthikanti et al. 2022, Section 5).
  switch (ctx_.plan.recompute) {
  case Recompute::None: break;
  case Recompute::Selective: // the attention core is rebuilt from Q, K, V in backward (flash kept nothing of it)
    saved.probs.reset();
    saved.attn_mask.reset();
    saved.probs_dropped.reset();
    break;
  case Recompute::Full: { // only the layer input; backward reruns the forward
    Tensor input = std::move(saved.x);
    saved = LayerActivations{};
    saved.x = std::move(input);
    break;
  }
  }
  for (Tensor* t : {&saved.x, &saved.ln1, &saved.qkv, &saved.probs, &saved.attn_mask, &saved.probs_dropped,
                    &saved.lse, &saved.rng_state, &saved.context, &saved.drop1_mask, &saved.r1, &saved.ln2,
                    &saved.fc1_out, &saved.gelu_out, &saved.drop2_mask})
    keep(*t);
  ctx_.set_context(c.phase, c.layer, c.micro_batch, c.chunk);
  return y;
}

} // namespace gputwin::engine
