// The transformer layer's backward pass, with selective or full activation recompute first.
#include "gputwin/engine/model/transformer_layer.hpp"

#include "gputwin/models/flash_attention_cost.hpp"

namespace gputwin::engine {

Tensor TransformerLayer::backward(Tensor d_y, int64_t micro_batch, LayerActivations& saved)
{
  const OpContext c = ctx_.tracer.context();
  const auto layer = static_cast<int32_t>(layer_);
  if (ctx_.plan.recompute == Recompute::Full) {
    ctx_.set_context(traces::Phase::Recompute, layer, c.micro_batch, c.chunk);
    run_forward(saved, micro_batch); // rebuilds every activation from the stored input (y is not needed)
  }
  // (Selective recompute reruns the attention core where its backward begins: attention_backward.)
  ctx_.set_context(traces::Phase::Backward, layer, c.micro_batch, c.chunk);
  const Tensor d_r1 = mlp_backward(d_y, saved);
  Tensor d_x = attention_backward(d_r1, saved, micro_batch);
  saved = LayerActivations{};
  ctx_.set_context(c.phase, c.layer, c.micro_batch, c.chunk);
  return d_x;
}

// y = r1 + dropout(fc2(act(fc1(N2(r1)))) + b2): returns d_r1.
Tensor TransformerLayer::mlp_backward(const Tensor& d_y, LayerActivations& acts)
{
  const int64_t h = ctx_.hidden(), rows = ctx_.rows_full(), rows_l = ctx_.rows_local(), ffn = ctx_.ffn_local();
  const int64_t fc1_cols = ctx_.shape.fc1_per_rank();
  const bool swiglu = ctx_.model.activation == Activation::SwiGlu;
  Tensor d_o2; // without dropout the residual add passes d_y through (no kernel, none emitted)
  if (dropout_enabled()) {
    d_o2 = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {ctx_.seq_local(), ctx_.batch(), h});
    ctx_.compute(OpName::DropoutAddBwd,
                 [&] { ctx_.backend.dropout_backward(d_o2, d_y, acts.drop2_mask, ctx_.options.dropout); });
  } else {
    d_o2 = d_y.view(0, d_y.shape());
  }
  if (moe_) {
    const Tensor d_ln2 = moe_->backward(d_o2, acts.ln2, acts.moe);
    Tensor d_r1 = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {ctx_.seq_local(), ctx_.batch(), h});
    ctx_.compute(OpName::Ln2Bwd, [&] { ln2_.backward(ctx_, d_r1, d_ln2, acts.r1, rows_l); });
    ctx_.compute(OpName::ResidualBwd, [&] { ctx_.backend.accumulate(d_r1, d_y, rows_l * h); });
    return d_r1;
  }
  Tensor d_act = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {rows, ffn});
  {
    const Tensor d_o2_full = row_parallel_output_grad(d_o2);
    gemm(OpName::Fc2Dgrad, d_act, d_o2_full, false, fc2_weight_->weight, true, rows, ffn, h, 0.0f);
    gemm(OpName::Fc2Wgrad, fc2_weight_->grad, acts.act_out, true, d_o2_full, false, ffn, h, rows, 1.0f);
  }
  if (fc2_bias_)
    ctx_.compute(OpName::Fc2BiasGrad, [&] { ctx_.backend.bias_backward(fc2_bias_->grad, d_o2, rows_l, h); });
  // GeLU's and squared ReLU's gradient in place; SwiGLU's is twice as wide ([d gate | d up]).
  Tensor d_fc1 =
      swiglu ? ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {rows, fc1_cols}) : d_act.view(0, d_act.shape());
  ctx_.compute(activation_backward_op(ctx_.model.activation), [&] {
    if (swiglu)
      ctx_.backend.swiglu_backward(d_fc1, d_act, acts.fc1_out, rows, ffn);
    else if (ctx_.model.activation == Activation::SquaredRelu)
      ctx_.backend.squared_relu_backward(d_fc1, d_act, acts.fc1_out, rows * ffn);
    else
      ctx_.backend.gelu_backward(d_fc1, d_act, acts.fc1_out, rows * ffn);
  });
  Tensor d_m_in = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {ctx_.seq(), ctx_.batch(), h});
  // Megatron's order: the input gradient first, its reduction overlapped with the weight gradient; with SP the
  // fc1 input is re-gathered from the stored shard (Korthikanti et al. 2022, Section 4.2.2) before either.
  const Tensor m_in = column_parallel_input(acts.ln2);
  gemm(OpName::Fc1Dgrad, d_m_in, d_fc1, false, fc1_weight_->weight, true, rows, h, fc1_cols, 0.0f);
  if (fc1_bias_)
    ctx_.compute(OpName::Fc1BiasGrad, [&] { ctx_.backend.bias_backward(fc1_bias_->grad, d_fc1, rows, fc1_cols); });
  const Tensor d_ln2 = column_parallel_input_grad(std::move(d_m_in));
  gemm(OpName::Fc1Wgrad, fc1_weight_->grad, m_in, true, d_fc1, false, h, fc1_cols, rows, 1.0f);
  Tensor d_r1 = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {ctx_.seq_local(), ctx_.batch(), h});
  ctx_.compute(OpName::Ln2Bwd, [&] { ln2_.backward(ctx_, d_r1, d_ln2, acts.r1, rows_l); });
  ctx_.compute(OpName::ResidualBwd, [&] { ctx_.backend.accumulate(d_r1, d_y, rows_l * h); });
  return d_r1;
}

void TransformerLayer::attention_core_backward(Tensor& d_qkv, const Tensor& d_context, LayerActivations& acts,
                                               int64_t micro_batch)
{
  const AttentionDims dims = attention_dims();
  const int64_t b = dims.batch, a = dims.heads, s = dims.seq, d = dims.head_dim;
  if (ctx_.plan.attention == AttentionKernel::Flash) {
    const FusedAttentionCost cost = flash_attention_backward_cost(
        b * a, s, d, ctx_.backend.fused_attention_tile_tokens(), kv_share());
    const DropoutSite dropout = attention_dropout_site(micro_batch);
    ctx_.compute(OpName::AttnFlashBwd, OpCost{cost.flops, cost.bytes, cost.shape}, [&] {
      ctx_.backend.flash_attention_backward(d_qkv, d_context, acts.context, acts.lse, acts.rng_state, acts.qkv, dims,
                                            dropout);
    });
    return;
  }
  Tensor d_probs = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {b, a, s, s});
  const Tensor& attended = dropout_enabled() ? acts.probs_dropped : acts.probs;
  ctx_.compute(OpName::AttnContextBwd, [&] {
    ctx_.backend.attention_context_backward(d_probs, d_qkv, d_context, attended, acts.qkv, dims);
  });
  if (dropout_enabled())
    ctx_.compute(OpName::AttnDropoutBwd,
                 [&] { ctx_.backend.dropout_backward(d_probs, d_probs, acts.attn_mask, ctx_.options.dropout); });
  ctx_.compute(OpName::AttnSoftmaxBwd,
               [&] { ctx_.backend.causal_softmax_backward(d_probs, d_probs, acts.probs, b * a * s, s); });
  ctx_.compute(OpName::AttnScoresBwd, [&] { ctx_.backend.attention_scores_backward(d_qkv, d_probs, acts.qkv, dims); });
}

// r1 = x + dropout(proj(attention(RoPE(QKV(N1(x))))) + b): returns d_x.
Tensor TransformerLayer::attention_backward(const Tensor& d_r1, LayerActivations& acts, int64_t micro_batch)
{
  const int64_t h = ctx_.hidden(), rows = ctx_.rows_full(), rows_l = ctx_.rows_local();
  const int64_t width = ctx_.hidden_local(), qkv_cols = ctx_.shape.qkv_per_rank();

  Tensor d_o;
  if (dropout_enabled()) {
    d_o = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {ctx_.seq_local(), ctx_.batch(), h});
    ctx_.compute(OpName::DropoutAddBwd,
                 [&] { ctx_.backend.dropout_backward(d_o, d_r1, acts.drop1_mask, ctx_.options.dropout); });
  } else {
    d_o = d_r1.view(0, d_r1.shape());
  }
  Tensor d_context = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {rows, width});
  {
    const Tensor d_o_full = row_parallel_output_grad(d_o);
    gemm(OpName::ProjDgrad, d_context, d_o_full, false, proj_weight_->weight, true, rows, width, h, 0.0f);
    gemm(OpName::ProjWgrad, proj_weight_->grad, acts.context, true, d_o_full, false, width, h, rows, 1.0f);
  }
  if (proj_bias_)
    ctx_.compute(OpName::ProjBiasGrad, [&] { ctx_.backend.bias_backward(proj_bias_->grad, d_o, rows_l, h); });
  if (ctx_.plan.recompute == Recompute::Selective && ctx_.plan.attention == AttentionKernel::Unfused) {
    // Korthikanti et al. 2022, Section 4.3: the attention core rerun from the saved Q, K, V (rotated: RoPE is not
    // rerun) where its backward begins (flash attention has nothing to rerun: its backward rebuilds the
    // probabilities).
    const OpContext c = ctx_.tracer.context();
    ctx_.set_context(traces::Phase::Recompute, c.layer, c.micro_batch, c.chunk);
    attention_core_forward(acts, micro_batch);
    ctx_.set_context(c.phase, c.layer, c.micro_batch, c.chunk);
  }
  Tensor d_qkv = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {rows, qkv_cols});
  attention_core_backward(d_qkv, d_context, acts, micro_batch);
  if (ctx_.model.position == PositionEmbedding::Rope) // back to the gradient of the unrotated Q and K
    ctx_.compute(OpName::RopeBwd, [&] { ctx_.backend.rope_backward(d_qkv, rope_dims()); });
  Tensor d_a_in = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {ctx_.seq(), ctx_.batch(), h});
  const Tensor a_in = column_parallel_input(acts.ln1);
  gemm(OpName::QkvDgrad, d_a_in, d_qkv, false, qkv_weight_->weight, true, rows, h, qkv_cols, 0.0f);
  if (qkv_bias_)
    ctx_.compute(OpName::QkvBiasGrad, [&] { ctx_.backend.bias_backward(qkv_bias_->grad, d_qkv, rows, qkv_cols); });
  const Tensor d_ln1 = column_parallel_input_grad(std::move(d_a_in));
  gemm(OpName::QkvWgrad, qkv_weight_->grad, a_in, true, d_qkv, false, h, qkv_cols, rows, 1.0f);
  Tensor d_x = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {ctx_.seq_local(), ctx_.batch(), h});
  ctx_.compute(OpName::Ln1Bwd, [&] { ln1_.backward(ctx_, d_x, d_ln1, acts.x, rows_l); });
  ctx_.compute(OpName::ResidualBwd, [&] { ctx_.backend.accumulate(d_x, d_r1, rows_l * h); });
  return d_x;
}

} // namespace gputwin::engine
