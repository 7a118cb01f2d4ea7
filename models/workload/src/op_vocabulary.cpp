#include "gputwin/models/op_vocabulary.hpp"

#include "gputwin/models/flash_attention_cost.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace gputwin {

namespace {

using traces::GemmShape;
using traces::OpKind;

struct Entry {
  OpName op;
  const char* name;
  OpKind kind;
};

// In OpName order (checked by op_name()).
constexpr std::array<Entry, op_name_count> entries = {{
    {OpName::EmbeddingFwd, "embedding.fwd", OpKind::Compute},
    {OpName::EmbeddingDropoutFwd, "embedding.dropout.fwd", OpKind::Compute},
    {OpName::EmbeddingDropoutBwd, "embedding.dropout.bwd", OpKind::Compute},
    {OpName::EmbeddingWgrad, "embedding.wgrad", OpKind::Compute},
    {OpName::Ln1Fwd, "ln1.fwd", OpKind::Compute},
    {OpName::QkvFwd, "qkv.fwd", OpKind::Compute},
    {OpName::AttnScoresFwd, "attn.scores.fwd", OpKind::Compute},
    {OpName::AttnSoftmaxFwd, "attn.softmax.fwd", OpKind::Compute},
    {OpName::AttnDropoutFwd, "attn.dropout.fwd", OpKind::Compute},
    {OpName::AttnContextFwd, "attn.context.fwd", OpKind::Compute},
    {OpName::AttnFlashFwd, "attn.flash.fwd", OpKind::Compute},
    {OpName::AttnCpCopyFwd, "attn.cp_copy.fwd", OpKind::Compute},
    {OpName::ProjFwd, "proj.fwd", OpKind::Compute},
    {OpName::DropoutAddFwd, "dropout_add.fwd", OpKind::Compute},
    {OpName::Ln2Fwd, "ln2.fwd", OpKind::Compute},
    {OpName::Fc1Fwd, "fc1.fwd", OpKind::Compute},
    {OpName::GeluFwd, "gelu.fwd", OpKind::Compute},
    {OpName::Fc2Fwd, "fc2.fwd", OpKind::Compute},
    {OpName::DropoutAddBwd, "dropout_add.bwd", OpKind::Compute},
    {OpName::Fc2Dgrad, "fc2.dgrad", OpKind::Compute},
    {OpName::Fc2Wgrad, "fc2.wgrad", OpKind::Compute},
    {OpName::Fc2BiasGrad, "fc2.bias_grad", OpKind::Compute},
    {OpName::GeluBwd, "gelu.bwd", OpKind::Compute},
    {OpName::Fc1Dgrad, "fc1.dgrad", OpKind::Compute},
    {OpName::Fc1BiasGrad, "fc1.bias_grad", OpKind::Compute},
    {OpName::Fc1Wgrad, "fc1.wgrad", OpKind::Compute},
    {OpName::Ln2Bwd, "ln2.bwd", OpKind::Compute},
    {OpName::ResidualBwd, "residual.bwd", OpKind::Compute},
    {OpName::ProjDgrad, "proj.dgrad", OpKind::Compute},
    {OpName::ProjWgrad, "proj.wgrad", OpKind::Compute},
    {OpName::ProjBiasGrad, "proj.bias_grad", OpKind::Compute},
    {OpName::AttnContextDgradProbs, "attn.context.dgrad_probs", OpKind::Compute},
    {OpName::AttnContextDgradV, "attn.context.dgrad_v", OpKind::Compute},
    {OpName::AttnContextBwd, "attn.context.bwd", OpKind::Compute},
    {OpName::AttnDropoutBwd, "attn.dropout.bwd", OpKind::Compute},
    {OpName::AttnSoftmaxBwd, "attn.softmax.bwd", OpKind::Compute},
    {OpName::AttnScoresDgradQ, "attn.scores.dgrad_q", OpKind::Compute},
    {OpName::AttnScoresDgradK, "attn.scores.dgrad_k", OpKind::Compute},
    {OpName::AttnScoresBwd, "attn.scores.bwd", OpKind::Compute},
    {OpName::AttnFlashBwd, "attn.flash.bwd", OpKind::Compute},
    {OpName::AttnCpCopyBwd, "attn.cp_copy.bwd", OpKind::Compute},
    {OpName::QkvDgrad, "qkv.dgrad", OpKind::Compute},
    {OpName::QkvBiasGrad, "qkv.bias_grad", OpKind::Compute},
    {OpName::QkvWgrad, "qkv.wgrad", OpKind::Compute},
    {OpName::Ln1Bwd, "ln1.bwd", OpKind::Compute},
    {OpName::MlaQDownFwd, "mla.q_down.fwd", OpKind::Compute},
    {OpName::MlaQNormFwd, "mla.q_norm.fwd", OpKind::Compute},
    {OpName::MlaQUpFwd, "mla.q_up.fwd", OpKind::Compute},
    {OpName::MlaKvDownFwd, "mla.kv_down.fwd", OpKind::Compute},
    {OpName::MlaKvNormFwd, "mla.kv_norm.fwd", OpKind::Compute},
    {OpName::MlaKvUpFwd, "mla.kv_up.fwd", OpKind::Compute},
    {OpName::MlaKvUpDgrad, "mla.kv_up.dgrad", OpKind::Compute},
    {OpName::MlaKvUpWgrad, "mla.kv_up.wgrad", OpKind::Compute},
    {OpName::MlaKvNormBwd, "mla.kv_norm.bwd", OpKind::Compute},
    {OpName::MlaKvDownDgrad, "mla.kv_down.dgrad", OpKind::Compute},
    {OpName::MlaKvDownWgrad, "mla.kv_down.wgrad", OpKind::Compute},
    {OpName::MlaQUpDgrad, "mla.q_up.dgrad", OpKind::Compute},
    {OpName::MlaQUpWgrad, "mla.q_up.wgrad", OpKind::Compute},
    {OpName::MlaQNormBwd, "mla.q_norm.bwd", OpKind::Compute},
    {OpName::MlaQDownDgrad, "mla.q_down.dgrad", OpKind::Compute},
    {OpName::MlaQDownWgrad, "mla.q_down.wgrad", OpKind::Compute},
    {OpName::RopeFwd, "rope.fwd", OpKind::Compute},
    {OpName::RopeBwd, "rope.bwd", OpKind::Compute},
    {OpName::SwigluFwd, "swiglu.fwd", OpKind::Compute},
    {OpName::SwigluBwd, "swiglu.bwd", OpKind::Compute},
    {OpName::SquaredReluFwd, "squared_relu.fwd", OpKind::Compute},
    {OpName::SquaredReluBwd, "squared_relu.bwd", OpKind::Compute},
    {OpName::RouterFwd, "moe.router.fwd", OpKind::Compute},
    {OpName::RouterTopkFwd, "moe.router_topk.fwd", OpKind::Compute},
    {OpName::MoePermuteFwd, "moe.permute.fwd", OpKind::Compute},
    {OpName::ExpertFc1Fwd, "expert.fc1.fwd", OpKind::Compute},
    {OpName::ExpertActFwd, "expert.act.fwd", OpKind::Compute},
    {OpName::ExpertFc2Fwd, "expert.fc2.fwd", OpKind::Compute},
    {OpName::MoeUnpermuteFwd, "moe.unpermute.fwd", OpKind::Compute},
    {OpName::MoeUnpermuteBwd, "moe.unpermute.bwd", OpKind::Compute},
    {OpName::ExpertFc2Dgrad, "expert.fc2.dgrad", OpKind::Compute},
    {OpName::ExpertFc2Wgrad, "expert.fc2.wgrad", OpKind::Compute},
    {OpName::ExpertActBwd, "expert.act.bwd", OpKind::Compute},
    {OpName::ExpertFc1Dgrad, "expert.fc1.dgrad", OpKind::Compute},
    {OpName::ExpertFc1Wgrad, "expert.fc1.wgrad", OpKind::Compute},
    {OpName::MoePermuteBwd, "moe.permute.bwd", OpKind::Compute},
    {OpName::RouterTopkBwd, "moe.router_topk.bwd", OpKind::Compute},
    {OpName::RouterDgrad, "moe.router.dgrad", OpKind::Compute},
    {OpName::RouterWgrad, "moe.router.wgrad", OpKind::Compute},
    {OpName::MtpNormFwd, "mtp.norm.fwd", OpKind::Compute},
    {OpName::MtpEhProjFwd, "mtp.eh_proj.fwd", OpKind::Compute},
    {OpName::MtpEhProjDgrad, "mtp.eh_proj.dgrad", OpKind::Compute},
    {OpName::MtpEhProjWgrad, "mtp.eh_proj.wgrad", OpKind::Compute},
    {OpName::MtpNormBwd, "mtp.norm.bwd", OpKind::Compute},
    {OpName::FinalLnFwd, "final_ln.fwd", OpKind::Compute},
    {OpName::LogitsFwd, "logits.fwd", OpKind::Compute},
    {OpName::CrossEntropyMaxFwd, "cross_entropy.max.fwd", OpKind::Compute},
    {OpName::CrossEntropyFwd, "cross_entropy.fwd", OpKind::Compute},
    {OpName::CrossEntropyBwd, "cross_entropy.bwd", OpKind::Compute},
    {OpName::LogitsDgrad, "logits.dgrad", OpKind::Compute},
    {OpName::LogitsWgrad, "logits.wgrad", OpKind::Compute},
    {OpName::FinalLnBwd, "final_ln.bwd", OpKind::Compute},
    {OpName::GradZero, "grad.zero", OpKind::Compute},
    {OpName::GradCheckScale, "grad.check_scale", OpKind::Compute},
    {OpName::OptimizerClipGrad, "optimizer.clip_grad", OpKind::Compute},
    {OpName::OptimizerAdam, "optimizer.adam", OpKind::Compute},
    {OpName::Fp8WeightCast, "fp8.weight_cast", OpKind::Compute},
    {OpName::TpAllGather, "tp.all_gather", OpKind::Collective},
    {OpName::TpReduceScatter, "tp.reduce_scatter", OpKind::Collective},
    {OpName::TpAllReduce, "tp.all_reduce", OpKind::Collective},
    {OpName::CrossEntropyMaxAllReduce, "cross_entropy.max.all_reduce", OpKind::Collective},
    {OpName::CrossEntropyTargetAllReduce, "cross_entropy.target.all_reduce", OpKind::Collective},
    {OpName::CrossEntropySumAllReduce, "cross_entropy.sum_exp.all_reduce", OpKind::Collective},
    {OpName::SpGradAllReduce, "tp.sp_grad.all_reduce", OpKind::Collective},
    {OpName::EmbeddingGradAllReduce, "embedding.grad_all_reduce", OpKind::Collective},
    {OpName::DpAllReduce, "dp.all_reduce", OpKind::Collective},
    {OpName::DpReduceScatter, "dp.reduce_scatter", OpKind::Collective},
    {OpName::DpAllGather, "dp.all_gather", OpKind::Collective},
    {OpName::CpKvExchange, "cp.kv_exchange", OpKind::Collective},
    {OpName::CpKvGradExchange, "cp.kv_grad_exchange", OpKind::Collective},
    {OpName::Fp8AmaxAllReduce, "fp8.amax.all_reduce", OpKind::Collective},
    {OpName::TpRingExchange, "tp.ring_exchange", OpKind::Collective},
    {OpName::TpReduceScatterChunk, "tp.reduce_scatter_chunk", OpKind::Collective},
    {OpName::MoeDispatch, "moe.dispatch", OpKind::Collective},
    {OpName::MoeCombine, "moe.combine", OpKind::Collective},
    {OpName::MoeCombineBwd, "moe.combine.bwd", OpKind::Collective},
    {OpName::MoeDispatchBwd, "moe.dispatch.bwd", OpKind::Collective},
    {OpName::MoeEtpAllGather, "moe.etp.all_gather", OpKind::Collective},
    {OpName::MoeEtpReduceScatter, "moe.etp.reduce_scatter", OpKind::Collective},
    {OpName::MoeAllGather, "moe.all_gather", OpKind::Collective},
    {OpName::MoeReduceScatter, "moe.reduce_scatter", OpKind::Collective},
    {OpName::EdpAllReduce, "edp.all_reduce", OpKind::Collective},
    {OpName::EdpReduceScatter, "edp.reduce_scatter", OpKind::Collective},
    {OpName::EdpAllGather, "edp.all_gather", OpKind::Collective},
    {OpName::PpAllGather, "pp.all_gather", OpKind::Collective},
    {OpName::PpSendActivation, "pp.send_activation", OpKind::Send},
    {OpName::PpRecvActivation, "pp.recv_activation", OpKind::Recv},
    {OpName::PpSendGradient, "pp.send_gradient", OpKind::Send},
    {OpName::PpRecvGradient, "pp.recv_gradient", OpKind::Recv},
}};

constexpr bool in_order()
{
  for (size_t i = 0; i < entries.size(); ++i)
    if (static_cast<size_t>(entries[i].op) != i)
      return false;
  return true;
}
static_assert(in_order(), "the vocabulary's entries must be in OpName order");

const Entry& entry(OpName op)
{
  return entries.at(static_cast<size_t>(op));
}

double d(int64_t v)
{
  return static_cast<double>(v);
}

OpCost gemm(GemmShape g)
{
  const double m = d(g.m), n = d(g.n), k = d(g.k), batch = d(g.batch);
  return {2.0 * m * n * k * batch, 2.0 * (m * k + k * n + m * n) * batch, g};
}

// A linear layer's GEMM (C = A B, A: m x k the activation side, B the weight side, C: m x n in bf16). Quantized,
// the operands are e = quantized_element_bytes bytes per element, scales included (FP8 1, MXFP8 1 + 1/32, NVFP4
// 1/2 + 1/16), and the bf16 operand that is not already quantized is cast first, row-wise and column-wise -- the
// activation for the forward GEMM, the output gradient for dgrad and wgrad -- at quantize_bytes_per_element
// (QuantizeUse::Activation): FP8 delayed scaling and MXFP8 read 2 and write e + e, FP8 tensorwise and NVFP4 read
// once more for the amax, NVFP4 once more for its Hadamard-transformed column-wise copy. `cast_elements`: the
// elements of that operand.
OpCost linear(const LayerShape& s, GemmShape g, double cast_elements)
{
  if (s.precision == GemmPrecision::Bf16)
    return gemm(g);
  g.precision = s.precision;
  const double e = quantized_element_bytes(s.precision);
  const double m = d(g.m), n = d(g.n), k = d(g.k), batch = d(g.batch);
  const double cast_bytes_per_element =
      quantize_bytes_per_element(s.precision, s.current_scaling, QuantizeUse::Activation);
  return {2.0 * m * n * k * batch, ((m * k + k * n) * e + 2.0 * m * n) * batch + cast_bytes_per_element * cast_elements,
          g};
}

// A memory-bound kernel: `bytes` read and written, `flops` element operations.
OpCost memory(double bytes, double flops)
{
  return {flops, bytes, {}};
}

// The rows (routed token copies) of the busiest EP rank's experts in the layer being emitted.
double expert_rows(const LayerShape& s)
{
  return s.expert_tokens();
}

// A grouped GEMM over the rank's E/ep experts: each expert's rows (m, rounded up), output width n, reduction k; one
// kernel per expert (Transformer Engine's GroupedLinear, GemmShape::grouped).
GemmShape expert_gemm(const LayerShape& s, int64_t n, int64_t k)
{
  const int64_t m = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(expert_rows(s) / d(s.experts_per_rank))));
  GemmShape g{m, n, k, s.experts_per_rank};
  g.grouped = true;
  return g;
}

// An expert weight gradient: (n x k) per expert, reducing over its rows.
GemmShape expert_wgrad(const LayerShape& s, int64_t n, int64_t k)
{
  GemmShape g = expert_gemm(s, n, k);
  g.k = g.m;
  g.m = n;
  g.n = k;
  return g;
}

OpCost sum(const OpCost& a, const OpCost& b)
{
  // The fused call's grid is the first GEMM's, twice the batch.
  return {a.flops + b.flops, a.bytes + b.bytes, GemmShape{a.gemm.m, a.gemm.n, a.gemm.k, 2 * a.gemm.batch}};
}

// Multi-head latent attention's projections and norms (MLASelfAttention), per TP rank; nullopt for any other op.
// Widths: the query LoRA rank (h without one), the key-value LoRA rank plus the shared rotary key, and the heads'
// query/key (nope + rope) and key-nope + value widths. FP8 casts each GEMM's own input (TE's per-module cast).
std::optional<OpCost> mla_op_cost(OpName op, const LayerShape& s)
{
  const int64_t T = s.tokens(), h = s.h, heads = s.heads_per_rank();
  const int64_t q_in = s.mla_q_lora > 0 ? s.mla_q_lora : h, kv_down = s.mla_kv_lora + s.mla_rope;
  const int64_t q_up = heads * s.mla_qk, kv_up = heads * (s.mla_qk - s.mla_rope + s.mla_v);
  const bool rms = s.norm == Norm::RmsNorm;
  const double q_norm = d(T * s.mla_q_lora), kv_norm = d(T * s.mla_kv_lora);
  switch (op) {
  case OpName::MlaQDownFwd: return linear(s, {T, s.mla_q_lora, h}, d(T * h));
  case OpName::MlaQNormFwd: return memory(q_norm * (2 + 2), q_norm * (rms ? 4 : 8));
  case OpName::MlaQUpFwd: return linear(s, {T, q_up, q_in}, d(T * q_in));
  case OpName::MlaKvDownFwd: return linear(s, {T, kv_down, h}, d(T * h));
  case OpName::MlaKvNormFwd: return memory(kv_norm * (2 + 2), kv_norm * (rms ? 4 : 8));
  case OpName::MlaKvUpFwd: return linear(s, {T, kv_up, s.mla_kv_lora}, d(T * s.mla_kv_lora));
  case OpName::MlaKvUpDgrad: return linear(s, {T, s.mla_kv_lora, kv_up}, d(T * kv_up));
  case OpName::MlaKvUpWgrad: return linear(s, {kv_up, s.mla_kv_lora, T}, 0);
  case OpName::MlaKvNormBwd: return memory(kv_norm * (2 + 2 + 2), kv_norm * 8);
  case OpName::MlaKvDownDgrad: return linear(s, {T, h, kv_down}, d(T * kv_down));
  case OpName::MlaKvDownWgrad: return linear(s, {kv_down, h, T}, 0);
  case OpName::MlaQUpDgrad: return linear(s, {T, q_in, q_up}, d(T * q_up));
  case OpName::MlaQUpWgrad: return linear(s, {q_up, q_in, T}, 0);
  case OpName::MlaQNormBwd: return memory(q_norm * (2 + 2 + 2), q_norm * 8);
  case OpName::MlaQDownDgrad: return linear(s, {T, h, s.mla_q_lora}, d(T * s.mla_q_lora));
  case OpName::MlaQDownWgrad: return linear(s, {s.mla_q_lora, h, T}, 0);
  default: return std::nullopt;
  }
}

// The ops of a MoE layer's expert block and of the MTP modules' projection; nullopt for any other op.
std::optional<OpCost> moe_op_cost(OpName op, const LayerShape& s)
{
  const int64_t T = s.tokens(), h = s.h;
  switch (op) {
  case OpName::RouterFwd: return gemm({s.tokens_outside_tp(), s.experts, h}); // replicated router, fp32 logits
  case OpName::RouterDgrad: return gemm({s.tokens_outside_tp(), h, s.experts});
  case OpName::RouterWgrad: return gemm({s.experts, h, s.tokens_outside_tp()});
  case OpName::RouterTopkFwd: // softmax or sigmoid over E logits, top-k, the aux loss's statistics
  case OpName::RouterTopkBwd: {
    const double logits_e = d(s.tokens_outside_tp() * s.experts);
    return memory(logits_e * (4 + 4), logits_e * 6);
  }
  case OpName::MoePermuteFwd: // gather the token copies into expert order: read k copies' rows, write them
  case OpName::MoePermuteBwd:
  case OpName::MoeUnpermuteFwd: // weighted sum of each token's k expert outputs (and its backward)
  case OpName::MoeUnpermuteBwd: {
    const double copies = d(s.tokens_outside_tp() * s.topk * h);
    return memory(copies * (2 + 2) + d(s.tokens_outside_tp() * s.topk) * 8, copies);
  }
  case OpName::ExpertFc1Fwd: return linear(s, expert_gemm(s, s.expert_fc1_per_rank(), h), expert_rows(s) * d(h));
  case OpName::ExpertFc2Fwd: return linear(s, expert_gemm(s, h, s.f_expert), expert_rows(s) * d(s.f_expert));
  case OpName::ExpertFc2Dgrad: return linear(s, expert_gemm(s, s.f_expert, h), expert_rows(s) * d(h));
  case OpName::ExpertFc1Dgrad:
    return linear(s, expert_gemm(s, h, s.expert_fc1_per_rank()), expert_rows(s) * d(s.expert_fc1_per_rank()));
  case OpName::ExpertFc2Wgrad: return linear(s, expert_wgrad(s, h, s.f_expert), 0);
  case OpName::ExpertFc1Wgrad: return linear(s, expert_wgrad(s, s.expert_fc1_per_rank(), h), 0);
  case OpName::ExpertActFwd: {
    const double x = expert_rows(s) * d(s.f_expert);
    return s.gated_experts ? memory(x * (2 + 2 + 2), x * 6) : memory(x * (2 + 2), x * 8);
  }
  case OpName::ExpertActBwd: {
    const double x = expert_rows(s) * d(s.f_expert);
    return s.gated_experts ? memory(x * (2 + 2 + 2 + 2 + 2), x * 12) : memory(x * (2 + 2 + 2), x * 10);
  }
  case OpName::MtpEhProjFwd: return linear(s, {T, h / s.t, 2 * h}, d(T * 2 * h));
  case OpName::MtpEhProjDgrad: return linear(s, {T, 2 * h, h / s.t}, d(T * h / s.t));
  case OpName::MtpEhProjWgrad: return linear(s, {h / s.t, 2 * h, T}, 0);
  default: break;
  }
  return std::nullopt;
}

// Transformer Engine's context-parallel ring attention around its fused steps (TransformerEngine
// pytorch/attention/dot_product_attention/context_parallel.py AttnFuncWithCPAndKVP2P): memory-bound kernels on the
// attention's stream, serial with the steps. Q: the rank's query elements, KV: its K and V elements (bf16).
// Forward: K and V packed into the ring's send buffer (torch.cat: read and write, 4 B per KV element); the fp32
// output started from step 0's (flash_attn_fwd_out_correction_init: read 2, write 4), corrected by each later step
// (read its bf16 output, read and write the fp32 one: 10 B), and cast back to bf16 (read 4, write 2). Backward: K
// and V copied into the ring buffer (4 B), step 0's dQ and dK dV copied into the accumulators (4 B each), each later
// step's added to them (read, read, write: 6 B). Causal: a later step covers half the rank's queries or keys on half
// the ranks (the load-balanced halves), 0.75 of them on average.
OpCost cp_copy_cost(OpName op, const LayerShape& s)
{
  const double q = d(s.b * s.heads_per_rank() * s.s * s.head_dim()), kv = 2.0 * d(s.tokens() * s.kv_per_rank());
  const double later_steps = 0.75 * d(s.cp - 1);
  if (op == OpName::AttnCpCopyFwd)
    return memory(4 * kv + 6 * q + later_steps * 10 * q + 6 * q, q * (2 + later_steps * 3));
  return memory(4 * kv + 4 * (q + kv) + later_steps * 6 * (q + kv), (q + kv) * later_steps);
}

} // namespace

const char* op_name(OpName op)
{
  return entry(op).name;
}

const traces::InternedName& interned_op_name(OpName op)
{
  static const std::vector<traces::InternedName> names = [] {
    std::vector<traces::InternedName> all;
    for (int i = 0; i < op_name_count; ++i)
      all.emplace_back(op_name(static_cast<OpName>(i)));
    return all;
  }();
  return names[static_cast<size_t>(op)];
}

traces::OpKind op_kind(OpName op)
{
  return entry(op).kind;
}

std::optional<OpName> parse_op_name(std::string_view name)
{
  for (const Entry& e : entries)
    if (name == e.name)
      return e.op;
  return std::nullopt;
}

OpName activation_forward_op(Activation activation)
{
  switch (activation) {
  case Activation::Gelu: return OpName::GeluFwd;
  case Activation::SwiGlu: return OpName::SwigluFwd;
  case Activation::SquaredRelu: return OpName::SquaredReluFwd;
  }
  return OpName::GeluFwd;
}

OpName activation_backward_op(Activation activation)
{
  switch (activation) {
  case Activation::Gelu: return OpName::GeluBwd;
  case Activation::SwiGlu: return OpName::SwigluBwd;
  case Activation::SquaredRelu: return OpName::SquaredReluBwd;
  }
  return OpName::GeluBwd;
}

OpCost op_cost(OpName op, const LayerShape& s)
{
  if (const std::optional<OpCost> moe = moe_op_cost(op, s))
    return *moe;
  if (const std::optional<OpCost> mla = mla_op_cost(op, s))
    return *mla;
  const int64_t T = s.tokens(), h = s.h, hp = s.hidden_per_rank(), f = s.ffn_per_rank(), v = s.vocab_per_rank;
  const int64_t f1 = s.fc1_per_rank(), qkv = s.qkv_per_rank(), kv = s.kv_per_rank();
  const int64_t batch = s.b * s.heads_per_rank(), dh = s.head_dim();
  const double kv_share = d(s.g) / d(s.a); // K and V heads per query head (grouped-query attention)
  const bool rms = s.norm == Norm::RmsNorm;
  const double outside = d(s.tokens_outside_tp() * h); // hidden-state elements outside the TP regions
  const double full = d(T * h);                        // ... inside them (the whole sequence)
  const double scores = d(batch * s.s * s.s);          // attention scores of one rank: b (a/t) s^2
  const double logits = d(T * v);
  switch (op) {
  case OpName::EmbeddingFwd: return memory(full * 2 + d(T) * 8, 0); // lookup of the rank's vocabulary rows
  case OpName::EmbeddingDropoutFwd: return memory(outside * (2 + 2 + 1), outside);
  case OpName::EmbeddingDropoutBwd: return memory(outside * (2 + 1 + 2), outside);
  case OpName::EmbeddingWgrad: return memory(full * (2 + 4 + 4), full); // scatter-add into the fp32 gradient
  case OpName::Ln1Fwd:
  case OpName::Ln2Fwd:
  case OpName::MtpNormFwd:
  case OpName::FinalLnFwd: return memory(outside * (2 + 2), outside * (rms ? 4 : 8));
  case OpName::QkvFwd: return linear(s, {T, qkv, h}, d(T * h));
  case OpName::AttnScoresFwd: return gemm({s.s, s.s, dh, batch});
  case OpName::AttnSoftmaxFwd: return memory(scores * (2 + 2), scores * 5);
  case OpName::AttnDropoutFwd: return memory(scores * (2 + 2 + 1), scores);
  case OpName::AttnContextFwd: return gemm({s.s, dh, s.s, batch});
  case OpName::AttnFlashFwd: {
    const FusedAttentionCost c = s.cp > 1 ? flash_attention_cp_step_cost(batch, s.s, dh, s.cp, true, kv_share)
                                          : flash_attention_forward_cost(batch, s.s, dh, flash_tile_tokens, kv_share);
    return {c.flops, c.bytes, c.shape};
  }
  case OpName::AttnCpCopyFwd:
  case OpName::AttnCpCopyBwd: return cp_copy_cost(op, s);
  case OpName::ProjFwd: return linear(s, {T, h, hp}, d(T * hp));
  case OpName::DropoutAddFwd: // (bias +) dropout + residual add; without dropout the add alone
    return s.dropout ? memory(outside * (2 + 2 + 2 + 1), outside * 3) : memory(outside * (2 + 2 + 2), outside);
  case OpName::Fc1Fwd: return linear(s, {T, f1, h}, d(T * h));
  case OpName::GeluFwd: return memory(d(T * f) * (2 + 2), d(T * f) * 8);
  case OpName::SwigluFwd: return memory(d(T * f) * (2 + 2 + 2), d(T * f) * 6); // silu(gate) * up
  case OpName::SquaredReluFwd: return memory(d(T * f) * (2 + 2), d(T * f) * 2); // max(x, 0)^2
  case OpName::Fc2Fwd: return linear(s, {T, h, f}, d(T * f));
  case OpName::DropoutAddBwd: return memory(outside * (2 + 1 + 2 + 2), outside * 2);
  case OpName::Fc2Dgrad: return linear(s, {T, f, h}, d(T * h));
  case OpName::Fc2Wgrad: return linear(s, {h, f, T}, 0);
  case OpName::Fc2BiasGrad:
  case OpName::ProjBiasGrad: return memory(full * 2, full); // reduction of the output gradient over the tokens
  case OpName::GeluBwd: return memory(d(T * f) * (2 + 2 + 2), d(T * f) * 10);
  case OpName::SwigluBwd: return memory(d(T * f) * (2 + 2 + 2 + 2 + 2), d(T * f) * 12); // gate, up, dY in; dgate, dup
  case OpName::SquaredReluBwd: return memory(d(T * f) * (2 + 2 + 2), d(T * f) * 3); // dX = 2 max(x, 0) dY
  case OpName::Fc1Dgrad: return linear(s, {T, h, f1}, d(T * f1));
  case OpName::Fc1BiasGrad: return memory(d(T * f1) * 2, d(T * f1));
  case OpName::Fc1Wgrad: return linear(s, {f1, h, T}, 0);
  case OpName::Ln1Bwd:
  case OpName::Ln2Bwd:
  case OpName::MtpNormBwd:
  case OpName::FinalLnBwd:
    return rms ? memory(outside * (2 + 2 + 2), outside * 8) : memory(outside * (2 + 2 + 2 + 2), outside * 12);
  case OpName::RopeFwd:
  case OpName::RopeBwd: // rotate the Q and K heads (or their gradients) by the cached cos/sin of each position
    return memory(d(T * (hp + kv)) * (2 + 2) + d(s.s * dh) * 4, d(T * (hp + kv)) * 3);
  case OpName::ResidualBwd: return memory(outside * (2 + 2 + 2), outside); // the residual branch's gradient joins
  case OpName::ProjDgrad: return linear(s, {T, hp, h}, d(T * h));
  case OpName::ProjWgrad: return linear(s, {h, hp, T}, 0);
  case OpName::AttnContextDgradProbs: return gemm({s.s, s.s, dh, batch});
  case OpName::AttnContextDgradV: return gemm({s.s, dh, s.s, batch});
  case OpName::AttnDropoutBwd: return memory(scores * (2 + 1 + 2), scores);
  case OpName::AttnSoftmaxBwd: return memory(scores * (2 + 2 + 2), scores * 4);
  case OpName::AttnScoresDgradQ:
  case OpName::AttnScoresDgradK: return gemm({s.s, dh, s.s, batch});
  case OpName::AttnContextBwd:
    return sum(op_cost(OpName::AttnContextDgradProbs, s), op_cost(OpName::AttnContextDgradV, s));
  case OpName::AttnScoresBwd: return sum(op_cost(OpName::AttnScoresDgradQ, s), op_cost(OpName::AttnScoresDgradK, s));
  case OpName::AttnFlashBwd: {
    const FusedAttentionCost c = s.cp > 1 ? flash_attention_cp_step_cost(batch, s.s, dh, s.cp, false, kv_share)
                                          : flash_attention_backward_cost(batch, s.s, dh, flash_tile_tokens, kv_share);
    return {c.flops, c.bytes, c.shape};
  }
  case OpName::QkvDgrad: return linear(s, {T, h, qkv}, d(T * qkv));
  case OpName::QkvBiasGrad: return memory(d(T * qkv) * 2, d(T * qkv));
  case OpName::QkvWgrad: return linear(s, {qkv, h, T}, 0);
  case OpName::LogitsFwd: return gemm({T, v, h});
  // Fused vocabulary-parallel cross-entropy: only s b values per reduction cross the ranks (max, target logit,
  // sum of exponentials), never the logits (Megatron-LM cross_entropy.py).
  // Its forward in two passes over the logits: the row maximum (before the max is all-reduced), then the
  // target logit and the sum of exponentials (before those are).
  case OpName::CrossEntropyMaxFwd: return memory(logits * 2, logits);
  case OpName::CrossEntropyFwd: return memory(logits * 4, logits * 3);
  case OpName::CrossEntropyBwd: return memory(logits * (4 + 2), logits * 2);
  case OpName::LogitsDgrad: return gemm({T, h, v});
  case OpName::LogitsWgrad: return gemm({v, h, T});
  default: break;
  }
  throw std::logic_error(std::string("op_cost: ") + op_name(op) + " is not a compute op sized by the layer shape");
}

OpCost optimizer_cost(double owned_parameters)
{
  return memory(owned_parameters * 30, owned_parameters * 12);
}

OpCost grad_zero_cost(double elements, double element_bytes)
{
  return memory(elements * element_bytes, 0);
}

OpCost grad_check_scale_cost(double elements, double element_bytes, bool scaled)
{
  return memory(elements * element_bytes * (scaled ? 3 : 1), elements * (scaled ? 3 : 2));
}

OpCost clip_grad_cost(double owned_parameters)
{
  return memory(owned_parameters * 4 * 3, owned_parameters * 3);
}

double quantize_bytes_per_element(GemmPrecision precision, bool current_scaling, QuantizeUse use)
{
  if (precision == GemmPrecision::Bf16)
    return 0;
  const double e = quantized_element_bytes(precision);
  const bool amax_pass = precision == GemmPrecision::Nvfp4 || (precision == GemmPrecision::Fp8 && current_scaling);
  const double amax = amax_pass ? 2.0 : 0.0;
  switch (use) {
  case QuantizeUse::Rowwise: return amax + 2.0 + e;
  case QuantizeUse::Weight: return amax + 2.0 + 2.0 * e;
  case QuantizeUse::Activation: break;
  }
  const double reads = precision == GemmPrecision::Nvfp4 ? 2.0 : 1.0; // NVFP4: the Hadamard column-wise kernel
  return amax + 2.0 * reads + 2.0 * e;
}

OpCost fp8_weight_cast_cost(double parameters, GemmPrecision precision, bool current_scaling)
{
  return memory(parameters * quantize_bytes_per_element(precision, current_scaling, QuantizeUse::Weight),
                parameters * 2);
}

double cp_exchange_bytes(OpName op, const LayerShape& s)
{
  const double kv_block = 2.0 * 2.0 * d(s.tokens() * s.kv_per_rank()); // K and V of the rank's tokens, bf16
  switch (op) {
  case OpName::CpKvExchange: return kv_block;
  case OpName::CpKvGradExchange: return 2.0 * kv_block;
  default: break;
  }
  throw std::logic_error(std::string("cp_exchange_bytes: ") + op_name(op) + " is not a context-parallel exchange");
}

double tp_collective_bytes(OpName op, const LayerShape& s)
{
  switch (op) {
  case OpName::TpAllGather:
  case OpName::TpReduceScatter:
  case OpName::TpAllReduce: return 2.0 * d(s.tokens() * s.h); // one full hidden-state tensor in 16 bits
  case OpName::TpRingExchange: return 2.0 * d(s.tokens() * s.h) / d(s.t); // one rank's slice in 16 bits
  case OpName::CrossEntropyMaxAllReduce:
  case OpName::CrossEntropyTargetAllReduce:
  case OpName::CrossEntropySumAllReduce: return 4.0 * d(s.tokens()); // one fp32 value per token
  default: break;
  }
  throw std::logic_error(std::string("tp_collective_bytes: ") + op_name(op) + " is not a TP collective of a layer");
}

double moe_collective_bytes(OpName op, const LayerShape& s)
{
  const double copies = 2.0 * d(s.tokens_outside_tp() * s.topk * s.h); // the rank's routed copies in bf16
  switch (op) {
  case OpName::MoeDispatch:
    // DeepEP with FP8 dispatches FP8 tokens with one fp32 scale per 128 values (DeepSeek-V3 Section 3.3.2: "we
    // quantize the activation before MoE up-projections into FP8 and then apply dispatch components"); DeepEP has
    // no other low-precision dispatch, so MXFP8 and NVFP4 plans dispatch the same FP8 tokens.
    return s.precision != GemmPrecision::Bf16 && s.dispatcher == MoeDispatcher::DeepEp
               ? copies * (1.0 + 4.0 / 128.0) / 2.0
               : copies;
  case OpName::MoeCombine:
  case OpName::MoeCombineBwd:
  case OpName::MoeDispatchBwd: return copies;
  case OpName::MoeEtpAllGather:
  case OpName::MoeEtpReduceScatter: return copies * d(s.etp);
  case OpName::MoeAllGather:
  case OpName::MoeReduceScatter: return 2.0 * d(s.tokens_outside_tp() * s.h) * d(s.ep * s.etp);
  default: break;
  }
  throw std::logic_error(std::string("moe_collective_bytes: ") + op_name(op) + " is not a MoE token exchange");
}

bool pipeline_scatter_gather(const LayerShape& s)
{
  return !s.sp && s.t > 1 && (s.tokens_outside_tp() * s.h) % s.t == 0;
}

double pipeline_gather_bytes(const LayerShape& s)
{
  return 2.0 * d(s.tokens_outside_tp() * s.h);
}

double pipeline_message_bytes(const LayerShape& s)
{
  return pipeline_scatter_gather(s) ? pipeline_gather_bytes(s) / d(s.t) : pipeline_gather_bytes(s);
}

std::optional<FusedPair> engine_fused_pair(OpName fused)
{
  if (fused == OpName::AttnContextBwd)
    return FusedPair{fused, OpName::AttnContextDgradProbs, OpName::AttnContextDgradV};
  if (fused == OpName::AttnScoresBwd)
    return FusedPair{fused, OpName::AttnScoresDgradQ, OpName::AttnScoresDgradK};
  return std::nullopt;
}

} // namespace gputwin
