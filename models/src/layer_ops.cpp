#include "gputwin/models/layer_ops.hpp"

#include "gputwin/models/parameter_count.hpp"

#include <optional>
#include <vector>

namespace gputwin {

namespace {

using traces::GemmShape;

// Before a TP block: SP all-gathers the sharded layernorm output; plain TP needs nothing (f is the identity).
void enter_tp_region_forward(OpEmitter& e, const LayerShape& s, int32_t group)
{
  if (s.t > 1 && s.sp)
    e.collective(OpName::TpAllGather, CollectiveOp::AllGather, group, tp_collective_bytes(OpName::TpAllGather, s),
                 compute_stream);
}

// After a TP block (and after the embedding's vocabulary-parallel lookup): SP reduce-scatters along the
// sequence, plain TP all-reduces (f-bar).
int64_t leave_tp_region(OpEmitter& e, const LayerShape& s, int32_t group, int32_t stream,
                        std::vector<int64_t> deps = {})
{
  if (s.t == 1)
    return -1;
  const OpName name = s.sp ? OpName::TpReduceScatter : OpName::TpAllReduce;
  return e.collective(name, s.sp ? CollectiveOp::ReduceScatter : CollectiveOp::AllReduce, group,
                      tp_collective_bytes(name, s), stream, std::move(deps));
}

// Backward into the end of a TP block: SP all-gathers the gradient (g-bar backward); TP: identity.
void enter_tp_region_backward(OpEmitter& e, const LayerShape& s, int32_t group)
{
  enter_tp_region_forward(e, s, group);
}

// Backward of a column-parallel linear layer: the input-gradient GEMM, its bias gradient (when the layer has a
// bias), then the input gradient's reduction (SP reduce-scatter / TP all-reduce) overlapped with the
// weight-gradient GEMM; with SP the saved sharded input is re-gathered for the weight gradient, overlapped
// with the input-gradient GEMM. Returns the reduction's id (or -1).
int64_t column_parallel_backward(OpEmitter& e, const LayerShape& s, int32_t group, OpName dgrad,
                                 std::optional<OpName> bias_grad, OpName wgrad)
{
  int64_t gathered = -1;
  if (s.t > 1 && s.sp)
    gathered = e.collective(OpName::TpAllGather, CollectiveOp::AllGather, group,
                            tp_collective_bytes(OpName::TpAllGather, s), tp_async_stream, {e.last_compute_id()});
  const int64_t dgrad_id = e.compute(dgrad, s);
  if (bias_grad)
    e.compute(*bias_grad, s);
  const int64_t reduced = leave_tp_region(e, s, group, tp_async_stream, {dgrad_id});
  e.compute(wgrad, s, gathered >= 0 ? std::vector<int64_t>{gathered} : std::vector<int64_t>{});
  return reduced;
}

std::vector<int64_t> after(int64_t id)
{
  return id >= 0 ? std::vector<int64_t>{id} : std::vector<int64_t>{};
}

void attention_core_forward(OpEmitter& e, const LayerShape& s)
{
  if (s.attention == AttentionKernel::Flash) {
    e.compute(OpName::AttnFlashFwd, s);
    return;
  }
  e.compute(OpName::AttnScoresFwd, s);
  e.compute(OpName::AttnSoftmaxFwd, s);
  e.compute(OpName::AttnDropoutFwd, s);
  e.compute(OpName::AttnContextFwd, s);
}

// The attention core's backward, from the context gradient to the Q, K, V gradients.
void attention_core_backward(OpEmitter& e, const LayerShape& s, Recompute recompute)
{
  if (s.attention == AttentionKernel::Flash) {
    // One fused backward (FlashAttention-2): P rebuilt tile by tile from Q, K and the stored log-sum-exp,
    // dropout redrawn from the RNG state; selective recompute has nothing to add.
    e.compute(OpName::AttnFlashBwd, s);
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
  e.compute(OpName::AttnContextDgradProbs, s);
  e.compute(OpName::AttnContextDgradV, s);
  e.compute(OpName::AttnDropoutBwd, s);
  e.compute(OpName::AttnSoftmaxBwd, s);
  e.compute(OpName::AttnScoresDgradQ, s);
  e.compute(OpName::AttnScoresDgradK, s);
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
  // Attention block.
  e.compute(OpName::Ln1Fwd, s);
  enter_tp_region_forward(e, s, g);
  e.compute(OpName::QkvFwd, s);
  attention_core_forward(e, s);
  e.compute(OpName::ProjFwd, s);
  leave_tp_region(e, s, g, compute_stream);
  e.compute(OpName::DropoutAddFwd, s);
  // MLP block.
  e.compute(OpName::Ln2Fwd, s);
  enter_tp_region_forward(e, s, g);
  e.compute(OpName::Fc1Fwd, s);
  e.compute(OpName::GeluFwd, s);
  e.compute(OpName::Fc2Fwd, s);
  leave_tp_region(e, s, g, compute_stream);
  e.compute(OpName::DropoutAddFwd, s);
}

void emit_layer_backward(OpEmitter& e, const LayerShape& s, int32_t g, Recompute recompute)
{
  // MLP block, from its output back.
  e.compute(OpName::DropoutAddBwd, s);
  enter_tp_region_backward(e, s, g);
  e.compute(OpName::Fc2Dgrad, s);
  e.compute(OpName::Fc2Wgrad, s);
  e.compute(OpName::Fc2BiasGrad, s);
  e.compute(OpName::GeluBwd, s);
  int64_t reduced = column_parallel_backward(e, s, g, OpName::Fc1Dgrad, OpName::Fc1BiasGrad, OpName::Fc1Wgrad);
  e.compute(OpName::Ln2Bwd, s, after(reduced));
  e.compute(OpName::ResidualBwd, s);
  // Attention block.
  e.compute(OpName::DropoutAddBwd, s);
  enter_tp_region_backward(e, s, g);
  e.compute(OpName::ProjDgrad, s);
  e.compute(OpName::ProjWgrad, s);
  e.compute(OpName::ProjBiasGrad, s);
  attention_core_backward(e, s, recompute);
  reduced = column_parallel_backward(e, s, g, OpName::QkvDgrad, OpName::QkvBiasGrad, OpName::QkvWgrad);
  e.compute(OpName::Ln1Bwd, s, after(reduced));
  e.compute(OpName::ResidualBwd, s);
}

void emit_embedding_forward(OpEmitter& e, const LayerShape& s, int32_t g)
{
  // Vocabulary-parallel lookup: each rank fills the rows of its vocabulary shard, then the partial
  // embeddings are summed: all-reduce, or with SP reduce-scatter straight into the sequence shards.
  e.compute(OpName::EmbeddingFwd, s);
  leave_tp_region(e, s, g, compute_stream);
  e.compute(OpName::EmbeddingDropoutFwd, s);
}

void emit_embedding_backward(OpEmitter& e, const LayerShape& s, int32_t g)
{
  e.compute(OpName::EmbeddingDropoutBwd, s);
  enter_tp_region_backward(e, s, g);
  e.compute(OpName::EmbeddingWgrad, s);
}

void emit_output_forward(OpEmitter& e, const LayerShape& s, int32_t g)
{
  e.compute(OpName::FinalLnFwd, s);
  enter_tp_region_forward(e, s, g);
  e.compute(OpName::LogitsFwd, s);
  // Fused vocabulary-parallel cross-entropy: only s b values per reduction cross the ranks (max, target logit,
  // sum of exponentials), never the logits (Megatron-LM cross_entropy.py).
  e.compute(OpName::CrossEntropyMaxFwd, s);
  auto all_reduce = [&](OpName name) {
    if (s.t > 1)
      e.collective(name, CollectiveOp::AllReduce, g, tp_collective_bytes(name, s), compute_stream);
  };
  all_reduce(OpName::CrossEntropyMaxAllReduce);
  e.compute(OpName::CrossEntropyFwd, s);
  all_reduce(OpName::CrossEntropyTargetAllReduce);
  all_reduce(OpName::CrossEntropySumAllReduce);
}

void emit_output_backward(OpEmitter& e, const LayerShape& s, int32_t g)
{
  e.compute(OpName::CrossEntropyBwd, s);
  const int64_t reduced = column_parallel_backward(e, s, g, OpName::LogitsDgrad, std::nullopt, OpName::LogitsWgrad);
  e.compute(OpName::FinalLnBwd, s, after(reduced));
}

} // namespace gputwin
