#pragma once
// THE vocabulary of a GPT rank's ops: every op the workload generator emits and the engine's tracer records,
// with its name, its kind and its cost (FLOPs, HBM bytes, GEMM shape; communication: the nccl-tests size),
// all sized by the one per-rank shape (layer_shape.hpp). The generator (layer_ops.cpp, workload.cpp) and the
// engine (engine/src/model, engine/src/train) name and cost their ops only through this table, and the test
// TwinContract.* holds the two programs against each other rank by rank, op by op.
//
// Where the engine differs (each difference is checked by TwinContract as the rule it is):
//   - Attention backward: the engine's backend computes dP and dV in one call and dQ and dK in one, traced as
//     `attn.context.bwd` and `attn.scores.bwd`; the generator times Megatron's two batched GEMMs each
//     (`attn.context.dgrad_probs` + `attn.context.dgrad_v`, `attn.scores.dgrad_q` + `attn.scores.dgrad_k`).
//     The fused op's cost is the sum of its pair's (engine_fused_pair()).
//   - Pipeline gradients: the engine keeps activation gradients in fp32 (its plan-vs-one-rank numerics tests
//     compare them bit for bit), Megatron sends them in bf16: the engine's pp.*_gradient ops carry twice
//     the generator's bytes (pipeline_message_bytes()).
//   - Flash attention's cost depends on the kernel's tile (the backend's), the generator uses the default tile.
//   - The all-gather of a scattered pipeline gradient (PpAllGather in backward) moves the engine's fp32 gradient:
//     twice the generator's bytes, like the gradient message itself.
//   - Megatron's gradient passes (GradZero, GradCheckScale, OptimizerClipGrad; WorkloadOptions::gradient_passes):
//     the engine runs none of them (it zeroes its gradients untraced, sums them unscaled and does not clip), so
//     TwinContract compares it with the generator's programs without them.
//
// Architectures: grouped-query attention narrows the QKV GEMM to (a + 2g) d / t columns; SwiGLU widens fc1 to
// 2F / t and replaces gelu.* by swiglu.*; squared ReLU replaces gelu.* by squared_relu.*; RMSNorm keeps the ln*.fwd/bwd names at its own cost; RoPE adds
// rope.fwd after the QKV GEMM and rope.bwd before its input gradient; without biases the *.bias_grad ops and
// without dropout the dropout ops (and dropout_add.bwd, then an identity) are not emitted.
// Context parallelism (cp > 1, flash only): the rank's attention runs as cp blockwise steps, each
// `attn.flash.fwd`/`bwd` costing one step (1/cp of the rank's balanced causal work), with the K/V ring
// exchange (`cp.kv_exchange`, SendRecv of one K/V block) of the next step overlapped.
// FP8, MXFP8, NVFP4 (s.precision): the linear layers' GEMMs (QKV, projection, fc1, fc2; forward, dgrad, wgrad)
// carry GemmShape::precision, operands of the precision's element size with their block scales, and the cast
// (row-wise and column-wise) of their bf16 input added to their bytes.

#include "gputwin/models/layer_shape.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace gputwin {

enum class OpName : uint8_t {
  // Embedding (first model chunk).
  EmbeddingFwd,
  EmbeddingDropoutFwd,
  EmbeddingDropoutBwd,
  EmbeddingWgrad,
  // Transformer layer, forward.
  Ln1Fwd,
  QkvFwd,
  AttnScoresFwd,
  AttnSoftmaxFwd,
  AttnDropoutFwd,
  AttnContextFwd,
  AttnFlashFwd,
  AttnCpCopyFwd, // context parallelism: Transformer Engine's K/V packing and output corrections around the ring
  ProjFwd,
  DropoutAddFwd,
  Ln2Fwd,
  Fc1Fwd,
  GeluFwd,
  Fc2Fwd,
  // Transformer layer, backward.
  DropoutAddBwd,
  Fc2Dgrad,
  Fc2Wgrad,
  Fc2BiasGrad,
  GeluBwd,
  Fc1Dgrad,
  Fc1BiasGrad,
  Fc1Wgrad,
  Ln2Bwd,
  ResidualBwd,
  ProjDgrad,
  ProjWgrad,
  ProjBiasGrad,
  AttnContextDgradProbs,
  AttnContextDgradV,
  AttnContextBwd, // the engine's fused pair (see above)
  AttnDropoutBwd,
  AttnSoftmaxBwd,
  AttnScoresDgradQ,
  AttnScoresDgradK,
  AttnScoresBwd, // the engine's fused pair
  AttnFlashBwd,
  AttnCpCopyBwd, // context parallelism: the ring's K/V copies and its dQ / dK dV accumulations
  QkvDgrad,
  QkvBiasGrad,
  QkvWgrad,
  Ln1Bwd,
  // Multi-head latent attention (s.mla_qk > 0; Megatron-Core multi_latent_attention.py MLASelfAttention): the
  // query and key-value down projections (replicated on every TP rank), their RMSNorms and up projections (split
  // by heads) in place of qkv.fwd / qkv.dgrad / qkv.wgrad; without a query LoRA rank the query is one projection
  // (mla.q_up.* at depth h, no q_down or q_norm).
  MlaQDownFwd,
  MlaQNormFwd,
  MlaQUpFwd,
  MlaKvDownFwd,
  MlaKvNormFwd,
  MlaKvUpFwd,
  MlaKvUpDgrad,
  MlaKvUpWgrad,
  MlaKvNormBwd,
  MlaKvDownDgrad,
  MlaKvDownWgrad,
  MlaQUpDgrad,
  MlaQUpWgrad,
  MlaQNormBwd,
  MlaQDownDgrad,
  MlaQDownWgrad,

  // Llama-style layers: rotary embedding of Q and K, the gated SwiGLU activation.
  RopeFwd,
  RopeBwd,
  SwigluFwd,
  SwigluBwd,
  // Nemotron-style MLP: squared ReLU, Transformer Engine's fused srelu / dsrelu kernels.
  SquaredReluFwd,
  SquaredReluBwd,
  // Mixture-of-experts layer (the MLP block of a MoE layer): router GEMM (h -> E) and its top-k/softmax, the
  // permutation of the routed token copies into expert order and back (weighted sum of the k outputs), the
  // experts' grouped GEMMs (E/ep local experts in one call: GemmShape batch = E/ep, m = tokens per expert).
  RouterFwd,
  RouterTopkFwd,
  MoePermuteFwd,
  ExpertFc1Fwd,
  ExpertActFwd,
  ExpertFc2Fwd,
  MoeUnpermuteFwd,
  MoeUnpermuteBwd,
  ExpertFc2Dgrad,
  ExpertFc2Wgrad,
  ExpertActBwd,
  ExpertFc1Dgrad,
  ExpertFc1Wgrad,
  MoePermuteBwd,
  RouterTopkBwd,
  RouterDgrad,
  RouterWgrad,
  // Multi-token prediction (DeepSeek-V3; the last stage, after the output layer): each module normalises the
  // hidden state and the next tokens' embedding (two norms), projects their concatenation 2h -> h (eh_proj, column-
  // parallel), runs one transformer layer and the shared output head.
  MtpNormFwd,
  MtpEhProjFwd,
  MtpEhProjDgrad,
  MtpEhProjWgrad,
  MtpNormBwd,
  // Output layer and loss (last model chunk).
  FinalLnFwd,
  LogitsFwd,
  CrossEntropyMaxFwd,
  CrossEntropyFwd,
  CrossEntropyBwd,
  LogitsDgrad,
  LogitsWgrad,
  FinalLnBwd,
  // Megatron's passes over the gradient buffers (WorkloadOptions::gradient_passes).
  GradZero,        // zero_grad_buffer(): the whole grad buffer cleared before the first forward
  GradCheckScale,  // DDP start_grad_sync: check_grads' norm, then the 1/(dp x cp) scaling, before a reduction
  OptimizerClipGrad, // clip_grad_norm_fp32: the owned main gradients' norm, then their scaling
  // End of the iteration.
  OptimizerAdam,
  Fp8WeightCast, // FP8: the linear weights cast (and transposed) once per iteration after the step
  // Communication.
  TpAllGather,
  TpReduceScatter,
  TpAllReduce,
  CrossEntropyMaxAllReduce,
  CrossEntropyTargetAllReduce,
  CrossEntropySumAllReduce,
  SpGradAllReduce,
  EmbeddingGradAllReduce,
  DpAllReduce,
  DpReduceScatter,
  DpAllGather,
  CpKvExchange,    // context parallelism: one ring step of the K/V block (forward)
  CpKvGradExchange, // one ring step backward: the K/V block and its gradient
  Fp8AmaxAllReduce, // FP8 delayed scaling: amaxes reduced per chunk forward and backward (and weights' per iteration)
  TpRingExchange,   // --tp-comm-overlap: one step of Transformer Engine's ring-exchange all-gather (one slice)
  TpReduceScatterChunk, // --tp-comm-overlap: one chunk of TE's pipelined userbuffers reduce-scatter (not NCCL)
  MoeDispatch,       // all-to-all(-v) of the routed token copies to their experts' EP ranks (forward)
  MoeCombine,        // all-to-all back to the tokens' ranks (forward)
  MoeCombineBwd,     // backward of the combine: output gradients to the experts' ranks
  MoeDispatchBwd,    // backward of the dispatch: input gradients back to the tokens' ranks
  MoeEtpAllGather,   // expert TP (etp > 1): the dispatched tokens gathered over the ETP group
  MoeEtpReduceScatter, // ... and the experts' partial outputs reduce-scattered
  MoeAllGather,      // --moe-dispatcher allgather: the EP x ETP group gathers every token
  MoeReduceScatter,  // ... and reduce-scatters the experts' outputs
  EdpAllReduce,      // the expert parameters' gradients over the expert data-parallel group
  EdpReduceScatter,  // ... ZeRO-1
  EdpAllGather,      // ... ZeRO-1: the updated expert parameters
  PpAllGather, // scatter/gather of pipeline messages: the TP all-gather of a received message's 1/t chunks
  PpSendActivation,
  PpRecvActivation,
  PpSendGradient,
  PpRecvGradient,
};
inline constexpr int op_name_count = static_cast<int>(OpName::PpRecvGradient) + 1;

// The op's name in traces ("qkv.fwd", "tp.all_gather", "pp.send_gradient", ...) and its kind.
const char* op_name(OpName op);
// The same name interned (traces/interned_name.hpp), made once per vocabulary entry: an op takes it without a lookup.
const traces::InternedName& interned_op_name(OpName op);
traces::OpKind op_kind(OpName op);
// The vocabulary entry of a trace name; nullopt for a name outside it.
std::optional<OpName> parse_op_name(std::string_view name);
// The MLP activation's one kernel forward (gelu.fwd, swiglu.fwd, squared_relu.fwd) and backward.
OpName activation_forward_op(Activation activation);
OpName activation_backward_op(Activation activation);

struct OpCost {
  double flops = 0;
  double bytes = 0;        // compute: HBM bytes read + written
  traces::GemmShape gemm;  // GEMMs and fused kernels timed as one (m, n, k > 0)
};

// The cost of a compute op sized by `s` alone (every compute op except OptimizerAdam). A bf16 GEMM costs
// 2 m n k batch FLOPs and 2 (m k + k n + m n) batch bytes; memory-bound kernels their bytes and element FLOPs.
OpCost op_cost(OpName op, const LayerShape& s);
// Mixed-precision Adam over `owned_parameters`: read the fp32 gradient, read and write the fp32 master weight,
// momentum and variance, write the bf16 weight (4 + 8 + 8 + 8 + 2 bytes and 12 FLOPs per parameter).
OpCost optimizer_cost(double owned_parameters);

// Megatron's gradient passes (WorkloadOptions::gradient_passes), memory-bound over `elements` gradients of
// `element_bytes` each: zero_grad_buffer writes them; start_grad_sync reads them for check_grads' norm and, where the
// reduction does not average (`scaled`: dp x cp > 1), reads and writes them to scale by 1/(dp x cp);
// clip_grad_norm_fp32 reads the owned fp32 main gradients for the norm, then reads and writes them to scale.
OpCost grad_zero_cost(double elements, double element_bytes);
OpCost grad_check_scale_cost(double elements, double element_bytes, bool scaled);
OpCost clip_grad_cost(double owned_parameters);

// What Transformer Engine's quantize of one bf16 element costs in HBM bytes, read and written, by what the copy is
// for. Activation: an activation or output gradient quantized row- and column-wise (the forward or dgrad operand
// and its wgrad transpose); Weight: a weight, both copies from one read (NVFP4 weights take 16 x 16 block scales and
// no Hadamard transform); Rowwise: one copy. Read 2 and write e per copy (e = quantized_element_bytes), one read
// for both copies of per-tensor FP8 and MXFP8 (cast_transpose; MXFP8's kernel computes both from the bf16 input).
// Tensorwise FP8 and NVFP4 (whose per-tensor FP32 scale comes from the amax) read the tensor once more for the amax
// first (TE csrc/extensions/cast.cpp quantize: nvte_compute_amax; csrc/quantizer.cpp NVFP4Quantizer::quantize_impl:
// nvte_hadamard_transform_amax or nvte_compute_amax_with_config); NVFP4's column-wise copy of an activation is the
// Hadamard-transformed transpose, quantized by a kernel of its own that reads the input again
// (nvte_hadamard_transform_cast_fusion_columnwise; rowwise: nvte_quantize_v2).
enum class QuantizeUse : uint8_t { Activation, Weight, Rowwise };
double quantize_bytes_per_element(GemmPrecision precision, bool current_scaling, QuantizeUse use);

// Casting `parameters` bf16 weights to the quantized `precision` with their transposes (read 2, write e + e bytes
// each, e = quantized_element_bytes: FP8 1 + 1, MXFP8 and NVFP4 with their block scales), once per iteration after
// the optimizer step; FP8 current scaling reads each weight once more for its amax (TE tensor/utils.py
// _cast_master_weights_to_fp8_current_scaling).
OpCost fp8_weight_cast_cost(double parameters, GemmPrecision precision, bool current_scaling);

// Bytes of one context-parallel ring step: forward the rank's K and V block in 16 bits; backward that and its
// gradient.
double cp_exchange_bytes(OpName op, const LayerShape& s);

// nccl-tests size of a layer's, the embedding's or the loss's TP collective under `s`; TpRingExchange: the bytes
// each rank sends (and receives) in one ring step, one rank's sequence slice of the all-gather's output (1/t of
// it: the t - 1 steps move what the all-gather moves per rank, (t - 1)/t of its size).
double tp_collective_bytes(OpName op, const LayerShape& s);
// Megatron-LM's scatter/gather of pipeline messages (Narayanan et al. SC'21, Section 4.1; megatron/
// p2p_communication.py `_communicate` with `scatter_gather_tensors_in_pipeline`, on by default and off with sequence
// parallelism, Megatron-LM 2022): without SP every TP rank holds the whole boundary tensor, so each sends only its
// 1/t of the flattened tensor over its own link (mpu.split_tensor_into_1d_equal_chunks) and the receiver all-gathers
// the t chunks over its TP group (mpu.gather_split_1d_tensor, PpAllGather) before using it. Megatron sends the whole
// tensor where t does not divide its elements.
bool pipeline_scatter_gather(const LayerShape& s);
// Bytes of one pipeline message each rank sends: the stage boundary's activation (or its gradient) in 16 bits,
// sharded by SP, or its 1/t chunk under scatter/gather.
double pipeline_message_bytes(const LayerShape& s);
// nccl-tests size of the all-gather that reassembles a scattered pipeline message (PpAllGather): the whole message.
double pipeline_gather_bytes(const LayerShape& s);
// Megatron keeps and reduces fp32 main gradients: data-parallel and embedding gradient bytes per parameter.
inline constexpr double gradient_bytes_per_parameter = 4.0;

// nccl-tests size of a MoE layer's token exchange (MoeDispatch ... MoeReduceScatter) under `s`, balanced: the
// rank's routed token copies in 16 bits (all-to-all: what each rank sends in all; ETP gather / reduce-scatter and
// the allgather dispatcher: the gathered whole).
double moe_collective_bytes(OpName op, const LayerShape& s);

// The engine's fused op for a generator pair (AttnContextBwd -> {AttnContextDgradProbs, AttnContextDgradV}).
struct FusedPair {
  OpName fused, first, second;
};
std::optional<FusedPair> engine_fused_pair(OpName fused);

} // namespace gputwin
