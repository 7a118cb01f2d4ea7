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

std::vector<int64_t> after(int64_t id)
{
  return id >= 0 ? std::vector<int64_t>{id} : std::vector<int64_t>{};
}

// The ops `emit` issues, in phase Recompute (a checkpointed piece's forward rerun in backward).
template <class Emit>
void rerun(OpEmitter& e, Emit&& emit)
{
  const traces::Phase phase = e.phase();
  e.set_phase(traces::Phase::Recompute);
  emit();
  e.set_phase(phase);
}

// A backward GEMM's cost launched with `comm_sms` SMs left to Transformer Engine's bulk overlap (0: none).
OpCost bulk_overlapped(OpName gemm, const LayerShape& s, int32_t comm_sms)
{
  OpCost cost = op_cost(gemm, s);
  cost.gemm.comm_sms = comm_sms;
  return cost;
}

// With SP, the saved sharded input of a column-parallel region re-gathered on the async stream as its backward
// starts, for the weight gradients: the gather's id (-1 without SP).
int64_t regather_input(OpEmitter& e, const LayerShape& s, int32_t group)
{
  if (s.t > 1 && s.sp)
    return e.collective(OpName::TpAllGather, CollectiveOp::AllGather, group,
                        tp_collective_bytes(OpName::TpAllGather, s), tp_async_stream, {e.last_compute_id()});
  return -1;
}

// Backward of a column-parallel linear layer: the input-gradient GEMM, its bias gradient (when the layer has a
// bias), then the input gradient's reduction (SP reduce-scatter / TP all-reduce) overlapped with the
// weight-gradient GEMM; with SP the saved sharded input is re-gathered for the weight gradient, overlapped
// with the input-gradient GEMM. Returns the reduction's id (or -1).
int64_t column_parallel_backward(OpEmitter& e, const LayerShape& s, int32_t group, OpName dgrad,
                                 std::optional<OpName> bias_grad, OpName wgrad, int32_t comm_sms = 0)
{
  const int64_t gathered = regather_input(e, s, group);
  const int64_t dgrad_id = e.compute(dgrad, bulk_overlapped(dgrad, s, comm_sms));
  if (bias_grad && s.bias)
    e.compute(*bias_grad, s);
  const int64_t reduced = leave_tp_region(e, s, group, tp_async_stream, {dgrad_id});
  e.compute(wgrad, bulk_overlapped(wgrad, s, comm_sms), after(gathered));
  return reduced;
}

// --tp-comm-overlap applies only where SP puts an all-gather / reduce-scatter next to the linear layer.
bool overlapped(const LayerShape& s, TpCommOverlap overlap)
{
  return overlap.enabled && s.t > 1 && s.sp;
}

// One of `chunks` row blocks of a linear layer's GEMM (m = the tokens): 1/chunks of the vocabulary op's FLOPs and
// bytes, so the chunks sum to the unchunked op, and m / chunks (rounded up) so the compute model times the
// smaller GEMM at its own, lower, efficiency.
OpCost gemm_chunk(OpName gemm, const LayerShape& s, int64_t chunks)
{
  OpCost c = op_cost(gemm, s);
  c.flops /= static_cast<double>(chunks);
  c.bytes /= static_cast<double>(chunks);
  c.gemm.m = (c.gemm.m + chunks - 1) / chunks;
  return c;
}

// TE's ring-exchange all-gather overlap (method "ring_exchange"): the GEMM on the gathered input (or output
// gradient) runs as t chunks, one per rank's sequence slice; chunk 0 uses the local slice, and while chunk i
// computes the ring moves slice i + 1 (each step sends the slice received in the previous one, so the steps run
// in order on tp_async_stream; the first sends the local slice, once the op before has produced it). Returns the
// last chunk's id.
int64_t ring_exchange_gemm(OpEmitter& e, const LayerShape& s, int32_t group, OpName gemm)
{
  const OpCost chunk = gemm_chunk(gemm, s, s.t);
  const double step_bytes = tp_collective_bytes(OpName::TpRingExchange, s);
  const int64_t input = e.last_compute_id();
  int64_t arrived = -1; // the ring step that brought the current chunk's slice
  int64_t last = -1;
  for (int64_t i = 0; i < s.t; ++i) {
    int64_t next = -1;
    if (i + 1 < s.t)
      next = e.collective(OpName::TpRingExchange, CollectiveOp::SendRecv, group, step_bytes, tp_async_stream,
                          i == 0 ? after(input) : std::vector<int64_t>{});
    last = e.compute(gemm, chunk, after(arrived));
    arrived = next;
  }
  return last;
}

// TE's pipelined reduce-scatter overlap (method "pipeline"): the row-parallel GEMM runs as
// userbuffers_pipeline_splits row chunks and each chunk's partial output is reduce-scattered on tp_async_stream
// while the next chunk computes. Returns the last reduction's id (the op after the block waits for it).
int64_t pipelined_reduce_scatter_gemm(OpEmitter& e, const LayerShape& s, int32_t group, OpName gemm)
{
  const int64_t splits = userbuffers_pipeline_splits;
  OpCost chunk = gemm_chunk(gemm, s, splits);
  chunk.gemm.comm_sms = userbuffers_margin_sms;
  const double bytes = tp_collective_bytes(OpName::TpReduceScatter, s) / static_cast<double>(splits);
  int64_t reduced = -1;
  for (int64_t i = 0; i < splits; ++i) {
    const int64_t computed = e.compute(gemm, chunk);
    // Its own vocabulary name: sim/collectives costs it as a userbuffers reduce-scatter, not a NCCL call.
    reduced = e.collective(OpName::TpReduceScatterChunk, CollectiveOp::ReduceScatter, group, bytes, tp_async_stream,
                           {computed});
  }
  return reduced;
}

// A column-parallel GEMM forward (QKV, fc1) after its TP region's entry: the SP all-gather then the GEMM, or
// with --tp-comm-overlap the ring-exchange overlap.
void column_parallel_forward(OpEmitter& e, const LayerShape& s, int32_t group, OpName gemm, TpCommOverlap overlap)
{
  if (overlapped(s, overlap)) {
    ring_exchange_gemm(e, s, group, gemm);
    return;
  }
  enter_tp_region_forward(e, s, group);
  e.compute(gemm, s);
}

// Multi-head latent attention's projections forward, in the TP region the QKV GEMM would open (the gathered input
// feeds both down projections; with --tp-comm-overlap the gather overlaps the first of them): the query's down
// projection, norm and up projection, then the key-value's (MLASelfAttention.get_query_key_value_tensors).
void mla_projections_forward(OpEmitter& e, const LayerShape& s, int32_t group, TpCommOverlap overlap)
{
  const bool q_lora = s.mla_q_lora > 0;
  const OpName first = q_lora ? OpName::MlaQDownFwd : OpName::MlaQUpFwd;
  if (overlapped(s, overlap)) {
    ring_exchange_gemm(e, s, group, first);
  } else {
    enter_tp_region_forward(e, s, group);
    e.compute(first, s);
  }
  if (q_lora) {
    e.compute(OpName::MlaQNormFwd, s);
    e.compute(OpName::MlaQUpFwd, s);
  }
  e.compute(OpName::MlaKvDownFwd, s);
  e.compute(OpName::MlaKvNormFwd, s);
  e.compute(OpName::MlaKvUpFwd, s);
}

// What "mla_up_proj" reruns before the attention core's backward (multi_latent_attention.py
// qkv_up_proj_and_rope_apply under qkv_up_checkpoint): the q norm and up projection (the q projection without a q
// latent), the kv norm and up projection, and the RoPE application; the latents they read stay saved.
void mla_up_projections_rerun(OpEmitter& e, const LayerShape& s)
{
  if (s.mla_q_lora > 0)
    e.compute(OpName::MlaQNormFwd, s);
  e.compute(OpName::MlaQUpFwd, s);
  e.compute(OpName::MlaKvNormFwd, s);
  e.compute(OpName::MlaKvUpFwd, s);
  if (s.position == PositionEmbedding::Rope)
    e.compute(OpName::RopeFwd, s);
}

// Their backward, as column_parallel_backward for the QKV GEMM: the input gradients through the key-value and query
// paths (the TP region's exit waits for the last), then the weight gradients, which read the gathered input.
int64_t mla_projections_backward(OpEmitter& e, const LayerShape& s, int32_t group, int32_t comm_sms)
{
  const bool q_lora = s.mla_q_lora > 0;
  const int64_t gathered = regather_input(e, s, group);
  const auto gemm = [&](OpName name, std::vector<int64_t> deps = {}) {
    return e.compute(name, bulk_overlapped(name, s, comm_sms), std::move(deps));
  };
  gemm(OpName::MlaKvUpDgrad);
  e.compute(OpName::MlaKvNormBwd, s);
  gemm(OpName::MlaKvDownDgrad);
  gemm(OpName::MlaQUpDgrad);
  if (q_lora) {
    e.compute(OpName::MlaQNormBwd, s);
    gemm(OpName::MlaQDownDgrad);
  }
  const int64_t reduced = leave_tp_region(e, s, group, tp_async_stream, {e.last_compute_id()});
  const std::vector<int64_t> input = after(gathered);
  gemm(OpName::MlaKvUpWgrad);
  gemm(OpName::MlaKvDownWgrad, input);
  gemm(OpName::MlaQUpWgrad, q_lora ? std::vector<int64_t>{} : input);
  if (q_lora)
    gemm(OpName::MlaQDownWgrad, input);
  return reduced;
}

// A row-parallel GEMM forward (projection, fc2) and its TP region's exit, then `next` (the bias-dropout-add),
// which needs the reduced output: blocking reduce-scatter / all-reduce, or with --tp-comm-overlap the pipelined
// reduce-scatter overlap.
// Returns the overlap's last reduction (-1 without the overlap: the reduction blocks the compute stream).
int64_t row_parallel_forward(OpEmitter& e, const LayerShape& s, int32_t group, OpName gemm,
                             std::optional<OpName> next, TpCommOverlap overlap)
{
  if (overlapped(s, overlap)) {
    const int64_t reduced = pipelined_reduce_scatter_gemm(e, s, group, gemm);
    if (next)
      e.compute(*next, s, after(reduced));
    return reduced;
  }
  e.compute(gemm, s);
  leave_tp_region(e, s, group, compute_stream);
  if (next)
    e.compute(*next, s);
  return -1;
}

// A row-parallel layer's input-gradient GEMM (projection, fc2) after the all-gather of its output gradient (g-bar
// backward): blocking, or with --tp-comm-overlap the ring-exchange overlap (TE's proj_dgrad / fc2_dgrad); the
// weight gradient that follows reads the gathered gradient.
void row_parallel_dgrad(OpEmitter& e, const LayerShape& s, int32_t group, OpName dgrad, TpCommOverlap overlap)
{
  if (overlapped(s, overlap)) {
    ring_exchange_gemm(e, s, group, dgrad);
    return;
  }
  enter_tp_region_backward(e, s, group);
  e.compute(dgrad, s);
}

// Context-parallel ring attention (cp > 1): cp blockwise fused steps; the K/V block for step i + 1 travels
// around the ring (on its own stream) while step i computes, so step i + 1 waits for that exchange.
void ring_attention(OpEmitter& e, const LayerShape& s, int32_t cp_group, OpName step, OpName exchange)
{
  const double bytes = cp_exchange_bytes(exchange, s);
  int64_t arrived = -1;
  for (int64_t i = 0; i < s.cp; ++i) {
    int64_t next = -1;
    if (i + 1 < s.cp)
      next = e.collective(exchange, CollectiveOp::SendRecv, cp_group, bytes, cp_stream,
                          arrived >= 0 ? std::vector<int64_t>{arrived} : std::vector<int64_t>{e.last_compute_id()});
    e.compute(step, s, arrived >= 0 ? std::vector<int64_t>{arrived} : std::vector<int64_t>{});
    arrived = next;
  }
  // Transformer Engine's copies and corrections around the ring (op_vocabulary.cpp cp_copy_cost).
  e.compute(step == OpName::AttnFlashFwd ? OpName::AttnCpCopyFwd : OpName::AttnCpCopyBwd, s);
}

void attention_core_forward(OpEmitter& e, const LayerShape& s, int32_t cp_group)
{
  if (s.attention == AttentionKernel::Flash) {
    if (s.cp > 1)
      ring_attention(e, s, cp_group, OpName::AttnFlashFwd, OpName::CpKvExchange);
    else
      e.compute(OpName::AttnFlashFwd, s);
    return;
  }
  e.compute(OpName::AttnScoresFwd, s);
  e.compute(OpName::AttnSoftmaxFwd, s);
  if (s.dropout)
    e.compute(OpName::AttnDropoutFwd, s);
  e.compute(OpName::AttnContextFwd, s);
}

// The attention core's backward, from the context gradient to the Q, K, V gradients, after its forward's rerun
// when `rerun_forward` (selective recompute: Korthikanti et al. 2022, Section 4.3, rerun QK^T, softmax, dropout and
// attention over V from the saved Q, K, V; Megatron-Core's "core_attn" checkpoint reruns a fused kernel's forward
// too, CP ring included).
void attention_core_backward(OpEmitter& e, const LayerShape& s, bool rerun_forward, int32_t cp_group)
{
  if (rerun_forward)
    rerun(e, [&] { attention_core_forward(e, s, cp_group); });
  if (s.attention == AttentionKernel::Flash) {
    // One fused backward (FlashAttention-2): P rebuilt tile by tile from Q, K and the stored log-sum-exp,
    // dropout redrawn from the RNG state. With cp > 1 the ring again, the K/V blocks travelling with their
    // gradients.
    if (s.cp > 1)
      ring_attention(e, s, cp_group, OpName::AttnFlashBwd, OpName::CpKvGradExchange);
    else
      e.compute(OpName::AttnFlashBwd, s);
    return;
  }
  e.compute(OpName::AttnContextDgradProbs, s);
  e.compute(OpName::AttnContextDgradV, s);
  if (s.dropout)
    e.compute(OpName::AttnDropoutBwd, s);
  e.compute(OpName::AttnSoftmaxBwd, s);
  e.compute(OpName::AttnScoresDgradQ, s);
  e.compute(OpName::AttnScoresDgradK, s);
}


// A dense MLP's forward from its (gathered) input to its reduced output, before the residual add: fc1 with the TP
// region's entry, the activation, fc2 with its exit. Returns row_parallel_forward's.
// The dense MLP's forward up to fc2's input: fc1 and the activation ...
void dense_mlp_fc1_forward(OpEmitter& e, const LayerShape& s, int32_t g, TpCommOverlap overlap)
{
  column_parallel_forward(e, s, g, OpName::Fc1Fwd, overlap);
  e.compute(activation_forward_op(s.activation), s);
}

int64_t dense_mlp_forward(OpEmitter& e, const LayerShape& s, int32_t g, TpCommOverlap overlap)
{
  dense_mlp_fc1_forward(e, s, g, overlap);
  return row_parallel_forward(e, s, g, OpName::Fc2Fwd, std::nullopt, overlap);
}

// The dense MLP's backward from its output gradient to fc1's input: fc2 and the activation ...
void dense_mlp_fc2_backward(OpEmitter& e, const LayerShape& s, int32_t g, TpCommOverlap overlap)
{
  row_parallel_dgrad(e, s, g, OpName::Fc2Dgrad, overlap);
  e.compute(OpName::Fc2Wgrad, s);
  if (s.bias)
    e.compute(OpName::Fc2BiasGrad, s);
  e.compute(activation_backward_op(s.activation), s);
}

// ... then fc1. Returns the id of fc1's input-gradient reduction (or -1).
int64_t dense_mlp_fc1_backward(OpEmitter& e, const LayerShape& s, int32_t g, TpCommOverlap overlap)
{
  const int32_t bulk_sms = overlapped(s, overlap) ? userbuffers_margin_sms : 0; // TE's bulk dgrad/wgrad overlap
  return column_parallel_backward(e, s, g, OpName::Fc1Dgrad, OpName::Fc1BiasGrad, OpName::Fc1Wgrad, bulk_sms);
}

// The dense MLP's backward from its output gradient (after the residual add's): fc2, the activation, fc1. Returns
// the id of fc1's input-gradient reduction (or -1).
int64_t dense_mlp_backward(OpEmitter& e, const LayerShape& s, int32_t g, TpCommOverlap overlap)
{
  dense_mlp_fc2_backward(e, s, g, overlap);
  return dense_mlp_fc1_backward(e, s, g, overlap);
}

// The shape of the shared experts: a dense TP MLP of their total width.
LayerShape shared_expert_shape(const LayerShape& s)
{
  LayerShape shared = s;
  shared.f = s.f_shared;
  shared.moe_layer = false;
  return shared;
}

// A token exchange of a MoE layer on `group` (skipped on a group of one rank), after `deps`.
void moe_exchange(OpEmitter& e, const LayerShape& s, OpName name, CollectiveOp op, int32_t group, int64_t ranks,
                  std::vector<int64_t> deps = {})
{
  if (ranks > 1)
    e.collective(name, op, group, moe_collective_bytes(name, s), compute_stream, std::move(deps));
}

// --moe-shared-expert-overlap (Megatron-Core token_dispatcher.py MoEAlltoAllTokenDispatcher token_dispatch /
// token_combine with shared_experts.py SharedExpertMLP): the shared experts' fc1 and activation are launched right
// after the tokens' all-to-all to the experts and run while it moves, their fc2 (and its TP reduction) right after
// the all-to-all back; the routed experts wait for their tokens, and the output for both. Megatron-Core puts the
// shared experts on a stream of their own, which waits for the compute stream before each part (so that they do
// not run beside the routed experts' GEMMs); here the exchange leaves the compute stream instead (ep_stream, after
// the op before it): the same overlap of exchange and shared experts, with the kernels on one stream. Megatron-Core
// turns TE's userbuffers overlap off for the shared experts' linears (shared_experts.py __init__): none here.
bool shared_experts_beside_exchanges(const LayerShape& s)
{
  return s.shared_expert_overlap && s.f_shared > 0 && s.ep > 1 && s.dispatcher != MoeDispatcher::AllGather;
}

// The all-to-all `name` on ep_stream after the compute stream's last op; returns its id.
int64_t moe_exchange_aside(OpEmitter& e, const LayerShape& s, OpName name, int32_t group)
{
  return e.collective(name, CollectiveOp::AllToAll, group, moe_collective_bytes(name, s), ep_stream,
                      after(e.last_compute_id()));
}

// The routed experts' forward between the exchanges: expert-TP gather, grouped GEMMs, expert-TP reduce-scatter; the
// first of them after `wait` (the dispatch when it moves aside).
void routed_experts_forward(OpEmitter& e, const LayerShape& s, const LayerGroups& g, std::vector<int64_t> wait)
{
  if (s.etp > 1) {
    moe_exchange(e, s, OpName::MoeEtpAllGather, CollectiveOp::AllGather, g.etp, s.etp, std::move(wait));
    wait.clear();
  }
  e.compute(OpName::ExpertFc1Fwd, s, std::move(wait));
  e.compute(OpName::ExpertActFwd, s);
  e.compute(OpName::ExpertFc2Fwd, s);
  moe_exchange(e, s, OpName::MoeEtpReduceScatter, CollectiveOp::ReduceScatter, g.etp, s.etp);
}

// A MoE layer's MLP block forward after ln2 (Megatron-Core MoELayer with the alltoall dispatcher, token_dispatcher.py
// MoEAlltoAllTokenDispatcher): router and top-k, permute into expert order, all-to-all to the experts' EP ranks,
// the expert-TP gather, the local experts' grouped GEMMs, the expert-TP reduce-scatter, all-to-all back, unpermute
// (weighted sum of the k outputs); then the shared experts as a dense TP MLP and the residual add. The allgather
// dispatcher gathers the EP group's tokens instead of the all-to-alls and reduce-scatters the outputs. With
// --moe-shared-expert-overlap the shared experts run beside the exchanges (shared_experts_beside_exchanges).
void moe_forward(OpEmitter& e, const LayerShape& s, const LayerGroups& g, TpCommOverlap overlap, bool with_residual)
{
  const bool gather = s.dispatcher == MoeDispatcher::AllGather;
  e.compute(OpName::RouterFwd, s);
  e.compute(OpName::RouterTopkFwd, s);
  if (gather)
    moe_exchange(e, s, OpName::MoeAllGather, CollectiveOp::AllGather, g.ep, s.ep);
  e.compute(OpName::MoePermuteFwd, s);
  int64_t reduced = -1;
  if (shared_experts_beside_exchanges(s)) {
    const LayerShape shared = shared_expert_shape(s);
    const int64_t dispatch = moe_exchange_aside(e, s, OpName::MoeDispatch, g.ep);
    dense_mlp_fc1_forward(e, shared, g.tp, TpCommOverlap{});
    routed_experts_forward(e, s, g, after(dispatch));
    const int64_t combine = moe_exchange_aside(e, s, OpName::MoeCombine, g.ep);
    reduced = row_parallel_forward(e, shared, g.tp, OpName::Fc2Fwd, std::nullopt, TpCommOverlap{});
    e.compute(OpName::MoeUnpermuteFwd, s, after(combine));
  } else {
    if (!gather)
      moe_exchange(e, s, OpName::MoeDispatch, CollectiveOp::AllToAll, g.ep, s.ep);
    routed_experts_forward(e, s, g, {});
    if (!gather)
      moe_exchange(e, s, OpName::MoeCombine, CollectiveOp::AllToAll, g.ep, s.ep);
    e.compute(OpName::MoeUnpermuteFwd, s);
    if (gather)
      moe_exchange(e, s, OpName::MoeReduceScatter, CollectiveOp::ReduceScatter, g.ep, s.ep);
    if (s.f_shared > 0)
      reduced = dense_mlp_forward(e, shared_expert_shape(s), g.tp, overlap);
  }
  if (with_residual)
    e.compute(OpName::DropoutAddFwd, s, after(reduced));
}

// The routed experts' backward between the exchanges (the reverse of routed_experts_forward), the first op after
// `wait`.
void routed_experts_backward(OpEmitter& e, const LayerShape& s, const LayerGroups& g, const LayerRecompute& recompute,
                             std::vector<int64_t> wait)
{
  if (s.etp > 1) {
    moe_exchange(e, s, OpName::MoeEtpAllGather, CollectiveOp::AllGather, g.etp, s.etp, std::move(wait));
    wait.clear();
  }
  if (recompute.expert_activation && !recompute.moe) {
    rerun(e, [&] { e.compute(OpName::ExpertActFwd, s, std::move(wait)); });
    wait.clear();
  }
  e.compute(OpName::ExpertFc2Dgrad, s, std::move(wait));
  e.compute(OpName::ExpertFc2Wgrad, s);
  e.compute(OpName::ExpertActBwd, s);
  e.compute(OpName::ExpertFc1Dgrad, s);
  e.compute(OpName::ExpertFc1Wgrad, s);
  moe_exchange(e, s, OpName::MoeEtpReduceScatter, CollectiveOp::ReduceScatter, g.etp, s.etp);
}

// The MoE block's backward from the residual add's gradient: the shared experts, unpermute, the exchanges and
// the experts in reverse, then permute and the router (with --moe-shared-expert-overlap the shared experts' fc2 and
// activation beside the combine's backward exchange, their fc1 beside the dispatch's). Returns the shared experts'
// input-gradient reduction (or -1).
int64_t moe_backward(OpEmitter& e, const LayerShape& s, const LayerGroups& g, const LayerRecompute& recompute,
                     TpCommOverlap overlap)
{
  const bool gather = s.dispatcher == MoeDispatcher::AllGather;
  int64_t reduced = -1;
  if (shared_experts_beside_exchanges(s)) {
    const LayerShape shared = shared_expert_shape(s);
    e.compute(OpName::MoeUnpermuteBwd, s);
    const int64_t combine = moe_exchange_aside(e, s, OpName::MoeCombineBwd, g.ep);
    dense_mlp_fc2_backward(e, shared, g.tp, TpCommOverlap{});
    routed_experts_backward(e, s, g, recompute, after(combine));
    const int64_t dispatch = moe_exchange_aside(e, s, OpName::MoeDispatchBwd, g.ep);
    reduced = dense_mlp_fc1_backward(e, shared, g.tp, TpCommOverlap{});
    e.compute(OpName::MoePermuteBwd, s, after(dispatch));
  } else {
    if (s.f_shared > 0) {
      const LayerShape shared = shared_expert_shape(s);
      if (recompute.shared_experts && !recompute.moe)
        rerun(e, [&] { dense_mlp_forward(e, shared, g.tp, overlap); });
      reduced = dense_mlp_backward(e, shared, g.tp, overlap);
    }
    if (gather)
      moe_exchange(e, s, OpName::MoeAllGather, CollectiveOp::AllGather, g.ep, s.ep);
    e.compute(OpName::MoeUnpermuteBwd, s);
    if (!gather)
      moe_exchange(e, s, OpName::MoeCombineBwd, CollectiveOp::AllToAll, g.ep, s.ep);
    routed_experts_backward(e, s, g, recompute, {});
    if (!gather)
      moe_exchange(e, s, OpName::MoeDispatchBwd, CollectiveOp::AllToAll, g.ep, s.ep);
    e.compute(OpName::MoePermuteBwd, s);
    if (gather)
      moe_exchange(e, s, OpName::MoeReduceScatter, CollectiveOp::ReduceScatter, g.ep, s.ep);
  }
  e.compute(OpName::RouterTopkBwd, s);
  e.compute(OpName::RouterDgrad, s);
  e.compute(OpName::RouterWgrad, s);
  return reduced;
}
} // namespace

LayerShape layer_shape(const GptConfig& model, const ParallelPlan& plan)
{
  LayerShape s;
  s.s = model.seq_len / plan.cp;
  s.cp = plan.cp;
  s.b = plan.micro_batch;
  s.h = model.hidden;
  s.a = model.heads;
  s.g = model.kv_heads();
  s.f = model.ffn();
  s.t = plan.tp;
  s.sp = plan.sequence_parallel() && plan.tp > 1;
  s.attention = plan.attention;
  s.activation = model.activation;
  s.norm = model.norm;
  s.position = model.position;
  s.bias = model.bias;
  s.dropout = model.dropout;
  s.precision = plan.precision;
  s.current_scaling = plan.current_scaling();
  if (model.head_size > 0)
    s.dh = model.head_size;
  if (model.mla.enabled()) {
    s.mla_qk = model.mla.qk_head_dim();
    s.mla_v = model.mla.v_head_dim;
    s.mla_q_lora = model.mla.q_lora_rank;
    s.mla_kv_lora = model.mla.kv_lora_rank;
    s.mla_rope = model.mla.qk_rope_head_dim;
    s.g = s.a; // every head has its own key and value (decompressed from the latent)
  }
  if (model.moe.enabled()) {
    s.experts = model.moe.experts;
    s.experts_per_rank = model.moe.experts / plan.ep;
    s.topk = model.moe.topk;
    s.ep = plan.ep;
    s.etp = plan.expert_tp();
    s.f_expert = model.moe.expert_ffn_hidden / plan.expert_tp();
    s.f_shared = model.moe.shared_width();
    s.dispatcher = plan.dispatcher;
    s.gated_experts = model.activation == Activation::SwiGlu;
  }
  s.vocab_per_rank = padded_vocab(model, plan.tp) / plan.tp;
  return s;
}

void emit_layer_forward(OpEmitter& e, const LayerShape& s, const LayerGroups& g, TpCommOverlap overlap)
{
  // Attention block.
  e.compute(OpName::Ln1Fwd, s);
  if (s.mla_qk > 0)
    mla_projections_forward(e, s, g.tp, overlap);
  else
    column_parallel_forward(e, s, g.tp, OpName::QkvFwd, overlap);
  if (s.position == PositionEmbedding::Rope)
    e.compute(OpName::RopeFwd, s);
  attention_core_forward(e, s, g.cp);
  row_parallel_forward(e, s, g.tp, OpName::ProjFwd, OpName::DropoutAddFwd, overlap);
  // MLP block.
  e.compute(OpName::Ln2Fwd, s);
  if (s.moe_layer) {
    moe_forward(e, s, g, overlap, true);
    return;
  }
  e.compute(OpName::DropoutAddFwd, s, after(dense_mlp_forward(e, s, g.tp, overlap)));
}

LayerRecompute layer_recompute(const ParallelPlan& plan)
{
  LayerRecompute r;
  r.whole_layer = plan.recompute == Recompute::Full;
  r.attention_core = recomputes_attention_core(plan);
  r.layernorm = recomputes(plan, RecomputeModule::Layernorm);
  r.expert_activation = recomputes(plan, RecomputeModule::MoeAct);
  r.mla_up_proj = recomputes(plan, RecomputeModule::MlaUpProj);
  r.dense_mlp = recomputes(plan, RecomputeModule::Mlp);
  r.moe = recomputes(plan, RecomputeModule::Moe);
  r.shared_experts = recomputes(plan, RecomputeModule::SharedExperts);
  return r;
}

void emit_layer_backward(OpEmitter& e, const LayerShape& s, const LayerGroups& groups, const LayerRecompute& recompute,
                         TpCommOverlap overlap)
{
  // Full recompute: the layer's forward again, collectives (and their overlap) included, before its backward.
  if (recompute.whole_layer)
    rerun(e, [&] { emit_layer_forward(e, s, groups, overlap); });
  const int32_t g = groups.tp;
  // MLP block, from its output back (without dropout the residual add's backward is the identity: no kernel).
  if (s.dropout)
    e.compute(OpName::DropoutAddBwd, s);
  // Its checkpointed pieces rerun (LayerRecompute): the whole MLP, or a MoE layer's separate pre-MLP norm.
  if (s.moe_layer && recompute.moe)
    rerun(e, [&] {
      e.compute(OpName::Ln2Fwd, s);
      moe_forward(e, s, groups, overlap, false);
    });
  else if (s.moe_layer && recompute.layernorm)
    rerun(e, [&] { e.compute(OpName::Ln2Fwd, s); });
  else if (!s.moe_layer && recompute.dense_mlp)
    rerun(e, [&] {
      e.compute(OpName::Ln2Fwd, s);
      dense_mlp_forward(e, s, g, overlap);
    });
  const int32_t bulk_sms = overlapped(s, overlap) ? userbuffers_margin_sms : 0; // TE's bulk dgrad/wgrad overlap
  int64_t reduced =
      s.moe_layer ? moe_backward(e, s, groups, recompute, overlap) : dense_mlp_backward(e, s, g, overlap);
  e.compute(OpName::Ln2Bwd, s, after(reduced));
  e.compute(OpName::ResidualBwd, s);
  // Attention block.
  if (s.dropout)
    e.compute(OpName::DropoutAddBwd, s);
  if (recompute.layernorm && s.mla_qk > 0) // MLA's input norm is its own module (the others fuse into QKV)
    rerun(e, [&] { e.compute(OpName::Ln1Fwd, s); });
  row_parallel_dgrad(e, s, g, OpName::ProjDgrad, overlap);
  e.compute(OpName::ProjWgrad, s);
  if (s.bias)
    e.compute(OpName::ProjBiasGrad, s);
  if (recompute.mla_up_proj && s.mla_qk > 0)
    rerun(e, [&] { mla_up_projections_rerun(e, s); });
  attention_core_backward(e, s, recompute.attention_core, groups.cp);
  if (s.position == PositionEmbedding::Rope)
    e.compute(OpName::RopeBwd, s);
  reduced = s.mla_qk > 0 ? mla_projections_backward(e, s, g, bulk_sms)
                          : column_parallel_backward(e, s, g, OpName::QkvDgrad, OpName::QkvBiasGrad, OpName::QkvWgrad,
                                                     bulk_sms);
  e.compute(OpName::Ln1Bwd, s, after(reduced));
  e.compute(OpName::ResidualBwd, s);
}

void emit_embedding_forward(OpEmitter& e, const LayerShape& s, int32_t g)
{
  // Vocabulary-parallel lookup: each rank fills the rows of its vocabulary shard, then the partial
  // embeddings are summed: all-reduce, or with SP reduce-scatter straight into the sequence shards.
  e.compute(OpName::EmbeddingFwd, s);
  leave_tp_region(e, s, g, compute_stream);
  if (s.dropout)
    e.compute(OpName::EmbeddingDropoutFwd, s);
}

void emit_embedding_backward(OpEmitter& e, const LayerShape& s, int32_t g)
{
  if (s.dropout)
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
