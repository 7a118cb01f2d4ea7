#include "gputwin/models/layer_ops.hpp"

#include "gputwin/models/flash_attention_cost.hpp"
#include "gputwin/models/parameter_count.hpp"

namespace gputwin {

namespace {

using traces::GemmShape;

double d(int64_t v)
{
  return static_cast<double>(v);
}

// Elements of a hidden-state tensor outside the TP regions (sharded by SP), and inside them (full sequence).
double outside(const LayerShape& s)
{
  return d(s.tokens_outside_tp() * s.h);
}
double full(const LayerShape& s)
{
  return d(s.tokens() * s.h);
}
// Elements of the attention scores of one rank: b (a/t) s^2.
double scores(const LayerShape& s)
{
  return d(s.b * s.heads_per_rank() * s.s * s.s);
}
// bytes of one full hidden-state tensor in 16 bits: the nccl-tests size of every TP collective of a layer.
double hidden_bytes(const LayerShape& s)
{
  return 2.0 * full(s);
}

// Before a TP block: SP all-gathers the sharded layernorm output; plain TP needs nothing (f is the identity).
void enter_tp_region_forward(OpEmitter& e, const LayerShape& s, int32_t group)
{
  if (s.t > 1 && s.sp)
    e.collective("tp.all_gather", CollectiveOp::AllGather, group, hidden_bytes(s), compute_stream);
}

// After a TP block: SP reduce-scatters along the sequence, plain TP all-reduces (f-bar).
void leave_tp_region_forward(OpEmitter& e, const LayerShape& s, int32_t group)
{
  if (s.t > 1)
    e.collective(s.sp ? "tp.reduce_scatter" : "tp.all_reduce",
                 s.sp ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce, group, hidden_bytes(s), compute_stream);
}

// Backward into the end of a TP block: SP all-gathers the gradient (g-bar backward); TP: identity.
void enter_tp_region_backward(OpEmitter& e, const LayerShape& s, int32_t group)
{
  if (s.t > 1 && s.sp)
    e.collective("tp.all_gather", CollectiveOp::AllGather, group, hidden_bytes(s), compute_stream);
}

// Backward of a linear pair's input side: the input-gradient GEMM, then its reduction (SP reduce-scatter /
// TP all-reduce) overlapped with the weight-gradient GEMM; with SP the saved sharded input is re-gathered
// for the weight gradient, overlapped with the input-gradient GEMM. Returns the reduction's id (or -1).
int64_t column_parallel_backward(OpEmitter& e, const LayerShape& s, int32_t group, const char* dgrad_name,
                                 GemmShape dgrad, const char* wgrad_name, GemmShape wgrad)
{
  int64_t gathered = -1;
  if (s.t > 1 && s.sp)
    gathered = e.collective("tp.all_gather", CollectiveOp::AllGather, group, hidden_bytes(s), tp_async_stream,
                            {e.last_compute_id()});
  const int64_t dgrad_id = e.gemm(dgrad_name, dgrad);
  // Its bias gradient: a reduction over the tokens of the output gradient (dgrad's k x m elements).
  e.memory("bias_grad", static_cast<double>(dgrad.m * dgrad.k) * 2, static_cast<double>(dgrad.m * dgrad.k));
  int64_t reduced = -1;
  if (s.t > 1)
    reduced = e.collective(s.sp ? "tp.reduce_scatter" : "tp.all_reduce",
                           s.sp ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce, group, hidden_bytes(s),
                           tp_async_stream, {dgrad_id});
  e.gemm(wgrad_name, wgrad, gathered >= 0 ? std::vector<int64_t>{gathered} : std::vector<int64_t>{});
  return reduced;
}

void attention_core_forward(OpEmitter& e, const LayerShape& s)
{
  const int64_t batch = s.b * s.heads_per_rank(), dh = s.head_dim();
  if (s.attention == AttentionKernel::Flash) {
    const FusedAttentionCost c = flash_attention_forward_cost(batch, s.s, dh);
    e.fused("attn.flash.fwd", c.shape, c.flops, c.bytes);
    return;
  }
  e.gemm("attn.scores.fwd", {s.s, s.s, dh, batch});
  e.memory("attn.softmax.fwd", scores(s) * (2 + 2), scores(s) * 5);
  e.memory("attn.dropout.fwd", scores(s) * (2 + 2 + 1), scores(s));
  e.gemm("attn.context.fwd", {s.s, dh, s.s, batch});
}

// The attention core's backward, from the context gradient to the Q, K, V gradients.
void attention_core_backward(OpEmitter& e, const LayerShape& s, Recompute recompute)
{
  const int64_t batch = s.b * s.heads_per_rank(), dh = s.head_dim();
  if (s.attention == AttentionKernel::Flash) {
    // One fused backward (FlashAttention-2): P rebuilt tile by tile from Q, K and the stored log-sum-exp,
    // dropout redrawn from the RNG state; selective recompute has nothing to add.
    const FusedAttentionCost c = flash_attention_backward_cost(batch, s.s, dh);
    e.fused("attn.flash.bwd", c.shape, c.flops, c.bytes);
    return;
  }
  if (recompute == Recompute::Selective) {
    // Korthikanti et al. 2022, Section 4.3: rerun QK^T, softmax, dropout and attention over V from the saved
    // Q, K, V before the attention core's backward.
    const traces::Phase phase = e.phase();
    e.set_phase(traces::Phase::Recompute);
    attention_core_forward(e, s);
    e.set_phase(phase);
  }
  e.gemm("attn.context.dgrad_probs", {s.s, s.s, dh, batch});
  e.gemm("attn.context.dgrad_v", {s.s, dh, s.s, batch});
  e.memory("attn.dropout.bwd", scores(s) * (2 + 1 + 2), scores(s));
  e.memory("attn.softmax.bwd", scores(s) * (2 + 2 + 2), scores(s) * 4);
  e.gemm("attn.scores.dgrad_q", {s.s, dh, s.s, batch});
  e.gemm("attn.scores.dgrad_k", {s.s, dh, s.s, batch});
}

} // namespace

LayerShape layer_shape(const GptConfig& model, const ParallelPlan& plan)
{
  LayerShape s;
  s.s = model.seq_len;
  s.b = plan.micro_batch;
  s.h = model.hidden;
  s.a = model.heads;
  s.t = plan.tp;
  s.sp = plan.sequence_parallel() && plan.tp > 1;
  s.attention = plan.attention;
  s.vocab_per_rank = padded_vocab(model, plan.tp) / plan.tp;
  return s;
}

void emit_layer_forward(OpEmitter& e, const LayerShape& s, int32_t g)
{
  const int64_t T = s.tokens(), h = s.h, hp = s.h / s.t;
  // Attention block.
  e.memory("ln1.fwd", outside(s) * (2 + 2), outside(s) * 8);
  enter_tp_region_forward(e, s, g);
  e.gemm("qkv.fwd", {T, 3 * hp, h});
  attention_core_forward(e, s);
  e.gemm("proj.fwd", {T, h, hp});
  leave_tp_region_forward(e, s, g);
  e.memory("dropout_add.fwd", outside(s) * (2 + 2 + 2 + 1), outside(s) * 3);
  // MLP block.
  e.memory("ln2.fwd", outside(s) * (2 + 2), outside(s) * 8);
  enter_tp_region_forward(e, s, g);
  e.gemm("fc1.fwd", {T, 4 * hp, h});
  e.memory("gelu.fwd", d(T * 4 * hp) * (2 + 2), d(T * 4 * hp) * 8);
  e.gemm("fc2.fwd", {T, h, 4 * hp});
  leave_tp_region_forward(e, s, g);
  e.memory("dropout_add.fwd", outside(s) * (2 + 2 + 2 + 1), outside(s) * 3);
}

void emit_layer_backward(OpEmitter& e, const LayerShape& s, int32_t g, Recompute recompute)
{
  const int64_t T = s.tokens(), h = s.h, hp = s.h / s.t;
  // MLP block, from its output back.
  e.memory("dropout_add.bwd", outside(s) * (2 + 1 + 2 + 2), outside(s) * 2);
  enter_tp_region_backward(e, s, g);
  e.gemm("fc2.dgrad", {T, 4 * hp, h});
  e.gemm("fc2.wgrad", {h, 4 * hp, T});
  e.memory("fc2.bias_grad", d(T * h) * 2, d(T * h));
  e.memory("gelu.bwd", d(T * 4 * hp) * (2 + 2 + 2), d(T * 4 * hp) * 10);
  int64_t reduced = column_parallel_backward(e, s, g, "fc1.dgrad", {T, h, 4 * hp}, "fc1.wgrad", {4 * hp, h, T});
  e.memory("ln2.bwd", outside(s) * (2 + 2 + 2 + 2), outside(s) * 12,
           reduced >= 0 ? std::vector<int64_t>{reduced} : std::vector<int64_t>{});
  e.memory("residual.bwd", outside(s) * (2 + 2 + 2), outside(s)); // gradient of the residual branch joins
  // Attention block.
  e.memory("dropout_add.bwd", outside(s) * (2 + 1 + 2 + 2), outside(s) * 2);
  enter_tp_region_backward(e, s, g);
  e.gemm("proj.dgrad", {T, hp, h});
  e.gemm("proj.wgrad", {h, hp, T});
  e.memory("proj.bias_grad", d(T * h) * 2, d(T * h));
  attention_core_backward(e, s, recompute);
  reduced = column_parallel_backward(e, s, g, "qkv.dgrad", {T, h, 3 * hp}, "qkv.wgrad", {3 * hp, h, T});
  e.memory("ln1.bwd", outside(s) * (2 + 2 + 2 + 2), outside(s) * 12,
           reduced >= 0 ? std::vector<int64_t>{reduced} : std::vector<int64_t>{});
  e.memory("residual.bwd", outside(s) * (2 + 2 + 2), outside(s));
}

void emit_embedding_forward(OpEmitter& e, const LayerShape& s, int32_t g)
{
  // Vocabulary-parallel lookup: each rank fills the rows of its vocabulary shard, then the partial
  // embeddings are summed: all-reduce, or with SP reduce-scatter straight into the sequence shards.
  e.memory("embedding.fwd", full(s) * 2 + d(s.tokens()) * 8, 0);
  if (s.t > 1)
    e.collective(s.sp ? "tp.reduce_scatter" : "tp.all_reduce",
                 s.sp ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce, g, hidden_bytes(s), compute_stream);
  e.memory("embedding.dropout.fwd", outside(s) * (2 + 2 + 1), outside(s));
}

void emit_embedding_backward(OpEmitter& e, const LayerShape& s, int32_t g)
{
  e.memory("embedding.dropout.bwd", outside(s) * (2 + 1 + 2), outside(s));
  if (s.t > 1 && s.sp)
    e.collective("tp.all_gather", CollectiveOp::AllGather, g, hidden_bytes(s), compute_stream);
  e.memory("embedding.wgrad", full(s) * (2 + 4 + 4), full(s)); // scatter-add into the fp32 gradient shard
}

void emit_output_forward(OpEmitter& e, const LayerShape& s, int32_t g)
{
  const int64_t T = s.tokens();
  e.memory("final_ln.fwd", outside(s) * (2 + 2), outside(s) * 8);
  enter_tp_region_forward(e, s, g);
  e.gemm("logits.fwd", {T, s.vocab_per_rank, s.h});
  // Fused vocabulary-parallel cross-entropy: only s b values per reduction cross the ranks (max, target
  // logit, sum of exponentials), never the logits (Megatron-LM cross_entropy.py).
  const double logits = d(T * s.vocab_per_rank);
  e.memory("cross_entropy.fwd", logits * (2 + 4), logits * 4);
  if (s.t > 1)
    for (int i = 0; i < 3; ++i)
      e.collective("tp.all_reduce", CollectiveOp::AllReduce, g, d(T) * 4, compute_stream);
}

void emit_output_backward(OpEmitter& e, const LayerShape& s, int32_t g)
{
  const int64_t T = s.tokens();
  const double logits = d(T * s.vocab_per_rank);
  e.memory("cross_entropy.bwd", logits * (4 + 2), logits * 2);
  int64_t reduced = column_parallel_backward(e, s, g, "logits.dgrad", {T, s.h, s.vocab_per_rank}, "logits.wgrad",
                                             {s.vocab_per_rank, s.h, T});
  e.memory("final_ln.bwd", outside(s) * (2 + 2 + 2 + 2), outside(s) * 12,
           reduced >= 0 ? std::vector<int64_t>{reduced} : std::vector<int64_t>{});
}

} // namespace gputwin
