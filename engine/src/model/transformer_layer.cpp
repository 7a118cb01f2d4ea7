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
  for (const Tensor* t : const_cast<LayerActivations*>(this)->tensors())
    total += t->bytes();
  return total;
}

std::vector<Tensor*> LayerActivations::tensors()
{
  LayerActivations& a = *this;
  std::vector<Tensor*> all{&a.x,       &a.ln1, &a.qkv, &a.probs,   &a.attn_mask, &a.probs_dropped, &a.lse,
                           &a.rng_state, &a.context, &a.drop1_mask, &a.r1, &a.ln2, &a.fc1_out, &a.act_out,
                           &a.drop2_mask};
  for (Tensor* t : a.moe.tensors())
    all.push_back(t);
  return all;
}

TransformerLayer::TransformerLayer(RankContext& ctx, ParameterStore& store, int64_t layer) : ctx_(ctx), layer_(layer)
{
  const GptConfig& m = ctx.model;
  const int64_t h = ctx.hidden(), kv = m.kv_dim(), fc1 = m.fc1_width(), ffn = m.ffn();
  const std::string p = "layers." + std::to_string(layer) + ".";
  const Sharding replicated{-1, 1}, columns{1, 1}, rows{0, 1};
  // [Q | K | V] columns, each split by t: a rank holds whole query heads and the whole K/V groups they read
  // (a and g are multiples of t). SwiGLU's fc1 is [gate | up], each split by t: the activation pairs gate and
  // up columns of the same rank.
  const Sharding qkv_columns{1, 1, {h, kv, kv}};
  const Sharding fc1_columns = m.activation == Activation::SwiGlu ? Sharding{1, 2} : columns;
  auto add = [&](const std::string& name, int64_t r, int64_t c, Sharding s, ParameterInit init, bool partial) {
    return &store.add(ctx, ParameterSpec{p + name, r, c, std::move(s), init, partial});
  };
  auto add_bias = [&](const std::string& name, int64_t c, Sharding s, bool partial) {
    return m.bias ? add(name, 1, c, std::move(s), ParameterInit::Zeros, partial) : nullptr;
  };
  ln1_ = NormParameters::declare(ctx, store, p + "ln1");
  qkv_weight_ = add("qkv.weight", h, h + 2 * kv, qkv_columns, ParameterInit::Normal, false);
  qkv_bias_ = add_bias("qkv.bias", h + 2 * kv, qkv_columns, false);
  proj_weight_ = add("proj.weight", h, h, rows, ParameterInit::ScaledNormal, false);
  proj_bias_ = add_bias("proj.bias", h, replicated, true);
  ln2_ = NormParameters::declare(ctx, store, p + "ln2");
  if (m.is_moe_layer(layer)) { // the router and the experts instead of the dense MLP
    moe_ = std::make_unique<MoeMlp>(ctx, store, layer);
    return;
  }
  fc1_weight_ = add("fc1.weight", h, fc1, fc1_columns, ParameterInit::Normal, false);
  fc1_bias_ = add_bias("fc1.bias", fc1, fc1_columns, false);
  fc2_weight_ = add("fc2.weight", ffn, h, rows, ParameterInit::ScaledNormal, false);
  fc2_bias_ = add_bias("fc2.bias", h, replicated, true);
}

AttentionDims TransformerLayer::attention_dims() const
{
  return AttentionDims{ctx_.batch(), ctx_.heads_local(), ctx_.seq(), ctx_.model.head_dim(),
                       ctx_.shape.kv_heads_per_rank()};
}

RopeDims TransformerLayer::rope_dims() const
{
  // The attention region holds every token of a sample (SP gathers the sequence before the QKV GEMM; no context
  // parallelism in the engine), so row i is position i.
  RopeDims r;
  r.attention = attention_dims();
  r.first_position = 0;
  return r;
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

Tensor TransformerLayer::bias_dropout_residual(Tensor partial_full, const Parameter* bias, const Tensor& residual,
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
  return dropout_residual(std::move(out), bias, residual, mask, micro_batch, site);
}

Tensor TransformerLayer::dropout_residual(Tensor out, const Parameter* bias, const Tensor& residual, Tensor& mask,
                                          int64_t micro_batch, int site)
{
  const int64_t h = ctx_.hidden(), rows = ctx_.rows_local();
  Tensor y = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {ctx_.seq_local(), ctx_.batch(), h});
  DropoutSite dropout;
  if (dropout_enabled()) {
    mask = ctx_.tensor(MemoryPurpose::Workspace, DType::U8, {ctx_.seq_local(), ctx_.batch(), h});
    dropout.key = dropout_key(ctx_.options.seed, ctx_.iteration, layer_, static_cast<DropoutSiteKind>(site));
    dropout.probability = ctx_.options.dropout;
    dropout.local_dims = {ctx_.seq_local(), ctx_.batch(), h, 1};
    dropout.offsets = {ctx_.seq_offset(), ctx_.sample_in_iteration(micro_batch), 0, 0};
    dropout.global_dims = {ctx_.seq(), ctx_.plan.effective_global_batch(), h, 1};
  }
  // Without dropout the generator still emits dropout_add.fwd, at the plain residual add's cost.
  ctx_.compute(OpName::DropoutAddFwd, [&] {
    if (bias)
      ctx_.backend.add_bias(out, out, bias->weight, rows, h);
    if (dropout_enabled()) {
      Tensor dropped = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {rows, h});
      ctx_.backend.dropout_forward(dropped, mask, out, dropout);
      ctx_.backend.add(y, residual, dropped, rows * h);
    } else {
      ctx_.backend.add(y, residual, out, rows * h);
    }
  });
  return y;
}

DropoutSite TransformerLayer::attention_dropout_site(int64_t micro_batch) const
{
  const int64_t b = ctx_.batch(), a = ctx_.heads_local(), s = ctx_.seq();
  DropoutSite dropout;
  dropout.key = dropout_key(ctx_.options.seed, ctx_.iteration, layer_, DropoutSiteKind::AttentionProbs);
  dropout.probability = dropout_enabled() ? ctx_.options.dropout : 0.0f; // flash keeps everything at p = 0
  dropout.local_dims = {b, a, s, s};
  dropout.offsets = {ctx_.sample_in_iteration(micro_batch), ctx_.head_offset(), 0, 0};
  dropout.global_dims = {ctx_.plan.effective_global_batch(), ctx_.model.heads, s, s};
  return dropout;
}

void TransformerLayer::attention_core_forward(LayerActivations& acts, int64_t micro_batch)
{
  const AttentionDims dims = attention_dims();
  const int64_t b = dims.batch, a = dims.heads, s = dims.seq, d = dims.head_dim;
  if (ctx_.plan.attention == AttentionKernel::Flash) {
    // One fused kernel: nothing (s, s) is kept, only the log-sum-exp and the dropout RNG state.
    acts.context = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {s, b, a * d});
    acts.lse = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {b, a, s});
    acts.rng_state = ctx_.tensor(MemoryPurpose::Workspace, DType::I32, {4});
    // The backend's own tile (op_vocabulary.hpp, "Where the engine differs").
    const FusedAttentionCost cost = flash_attention_forward_cost(
        b * a, s, d, ctx_.backend.fused_attention_tile_tokens(), kv_share());
    const DropoutSite dropout = attention_dropout_site(micro_batch);
    ctx_.compute(OpName::AttnFlashFwd, OpCost{cost.flops, cost.bytes, cost.shape}, [&] {
      ctx_.backend.flash_attention_forward(acts.context, acts.lse, acts.rng_state, acts.qkv, dims, dropout);
    });
    return;
  }
  Tensor scores = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {b, a, s, s});
  acts.probs = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {b, a, s, s});
  // Q K^T over every (sample, head): a batched GEMM (s x s x d).
  ctx_.compute(OpName::AttnScoresFwd, [&] { ctx_.backend.attention_scores_forward(scores, acts.qkv, dims); });
  ctx_.compute(OpName::AttnSoftmaxFwd, [&] { ctx_.backend.causal_softmax_forward(acts.probs, scores, b * a * s, s); });
  if (dropout_enabled()) {
    acts.attn_mask = ctx_.tensor(MemoryPurpose::Workspace, DType::U8, {b, a, s, s});
    acts.probs_dropped = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {b, a, s, s});
    const DropoutSite dropout = attention_dropout_site(micro_batch);
    ctx_.compute(OpName::AttnDropoutFwd,
                 [&] { ctx_.backend.dropout_forward(acts.probs_dropped, acts.attn_mask, acts.probs, dropout); });
  }
  // Selective recompute reruns this too (Megatron checkpoints the whole core attention); the result equals the
  // context kept from the forward pass, which backward's proj.wgrad has already used.
  acts.context = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {s, b, a * d});
  const Tensor& attended = dropout_enabled() ? acts.probs_dropped : acts.probs;
  ctx_.compute(OpName::AttnContextFwd,
               [&] { ctx_.backend.attention_context_forward(acts.context, attended, acts.qkv, dims); });
}

Tensor TransformerLayer::run_forward(LayerActivations& acts, int64_t micro_batch)
{
  const int64_t h = ctx_.hidden(), rows_l = ctx_.rows_local(), rows = ctx_.rows_full();
  const int64_t qkv_cols = ctx_.shape.qkv_per_rank(), fc1_cols = ctx_.shape.fc1_per_rank(), ffn = ctx_.ffn_local();
  const std::vector<int64_t> residual_shape{ctx_.seq_local(), ctx_.batch(), h};

  acts.ln1 = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, residual_shape);
  ctx_.compute(OpName::Ln1Fwd, [&] { ln1_.forward(ctx_, acts.ln1, acts.x, rows_l); });
  {
    const Tensor a_in = column_parallel_input(acts.ln1);
    acts.qkv = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {ctx_.seq(), ctx_.batch(), qkv_cols});
    // One op as Megatron's GEMM with its bias epilogue: the backends add the bias in a second kernel.
    ctx_.compute(OpName::QkvFwd, [&] {
      if (!qkv_bias_) {
        ctx_.backend.gemm(acts.qkv, a_in, false, qkv_weight_->weight, false, rows, qkv_cols, h, 1.0f, 0.0f);
        return;
      }
      Tensor qkv_f32 = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {rows, qkv_cols});
      ctx_.backend.gemm(qkv_f32, a_in, false, qkv_weight_->weight, false, rows, qkv_cols, h, 1.0f, 0.0f);
      ctx_.backend.add_bias(acts.qkv, qkv_f32, qkv_bias_->weight, rows, qkv_cols);
    });
  }
  if (ctx_.model.position == PositionEmbedding::Rope) // Q and K rotated in place, before the core uses them
    ctx_.compute(OpName::RopeFwd, [&] { ctx_.backend.rope_forward(acts.qkv, rope_dims()); });
  attention_core_forward(acts, micro_batch);

  Tensor proj_partial = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {ctx_.seq(), ctx_.batch(), h});
  gemm(OpName::ProjFwd, proj_partial, acts.context, false, proj_weight_->weight, false, rows, h, ctx_.hidden_local(),
       0.0f);
  acts.r1 = bias_dropout_residual(std::move(proj_partial), proj_bias_, acts.x, acts.drop1_mask, micro_batch,
                                  static_cast<int>(DropoutSiteKind::AttentionOutput));

  acts.ln2 = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, residual_shape);
  ctx_.compute(OpName::Ln2Fwd, [&] { ln2_.forward(ctx_, acts.ln2, acts.r1, rows_l); });
  if (moe_) // the tokens of this rank's residual stream, no tensor-parallel region (etp 1)
    return dropout_residual(moe_->forward(acts.ln2, acts.moe), nullptr, acts.r1, acts.drop2_mask, micro_batch,
                            static_cast<int>(DropoutSiteKind::MlpOutput));
  {
    const Tensor m_in = column_parallel_input(acts.ln2);
    acts.fc1_out = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {ctx_.seq(), ctx_.batch(), fc1_cols});
    acts.act_out = ctx_.tensor(MemoryPurpose::Workspace, DType::BF16, {ctx_.seq(), ctx_.batch(), ffn});
    const bool swiglu = ctx_.model.activation == Activation::SwiGlu;
    // Megatron's fused bias + activation: one op (two kernels here); without a bias the GEMM writes bf16.
    Tensor fc1_f32;
    if (fc1_bias_) {
      fc1_f32 = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {rows, fc1_cols});
      gemm(OpName::Fc1Fwd, fc1_f32, m_in, false, fc1_weight_->weight, false, rows, fc1_cols, h, 0.0f);
    } else {
      gemm(OpName::Fc1Fwd, acts.fc1_out, m_in, false, fc1_weight_->weight, false, rows, fc1_cols, h, 0.0f);
    }
    ctx_.compute(activation_forward_op(ctx_.model.activation), [&] {
      if (fc1_bias_)
        ctx_.backend.add_bias(acts.fc1_out, fc1_f32, fc1_bias_->weight, rows, fc1_cols);
      if (swiglu)
        ctx_.backend.swiglu_forward(acts.act_out, acts.fc1_out, rows, ffn);
      else if (ctx_.model.activation == Activation::SquaredRelu)
        ctx_.backend.squared_relu_forward(acts.act_out, acts.fc1_out, rows * ffn);
      else
        ctx_.backend.gelu_forward(acts.act_out, acts.fc1_out, rows * ffn);
    });
  }
  Tensor fc2_partial = ctx_.tensor(MemoryPurpose::Workspace, DType::F32, {ctx_.seq(), ctx_.batch(), h});
  gemm(OpName::Fc2Fwd, fc2_partial, acts.act_out, false, fc2_weight_->weight, false, rows, h, ffn, 0.0f);
  return bias_dropout_residual(std::move(fc2_partial), fc2_bias_, acts.r1, acts.drop2_mask, micro_batch,
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
  for (Tensor* t : saved.tensors())
    keep(*t);
  ctx_.set_context(c.phase, c.layer, c.micro_batch, c.chunk);
  return y;
}

} // namespace gputwin::engine
