#pragma once
// The ops of one GPT transformer layer on one tensor-parallel rank, forward, backward and recompute, with the
// TP collectives exactly where Megatron-LM puts them (parallelism primer; Korthikanti et al. 2022 Fig. 5):
//   TP:      f = identity fwd / all-reduce bwd before each block, f-bar = all-reduce fwd / identity bwd after;
//   TP + SP: g = all-gather fwd / reduce-scatter bwd, g-bar = reduce-scatter fwd / all-gather bwd, along the
//            sequence; the sharded layernorm output is saved and re-gathered in backward for the weight
//            gradient, overlapped with the input-gradient GEMM as Megatron does.
// Also the embedding (first model chunk) and the output layer with the vocabulary-parallel loss (last chunk).

#include "gputwin/models/layer_shape.hpp"
#include "gputwin/models/op_emitter.hpp"
#include "gputwin/models/parallel_plan.hpp"

namespace gputwin {


// Megatron-Core --tp-comm-overlap (WorkloadOptions::tp_comm_overlap) with TP + SP: Transformer Engine's
// userbuffers overlap, with Megatron's default flags (tp_comm_overlap_ag, tp_comm_overlap_rs, tp_comm_bulk_dgrad,
// tp_comm_bulk_wgrad on; tp_comm_overlap_rs_dgrad off) and TE's default methods (module/base.py initialize_ub):
//   - ring exchange (qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad): the all-gather before the GEMM is replaced by
//     t - 1 ring steps (`tp.ring_exchange`, a SendRecv of one rank's sequence slice on the TP group, on
//     tp_async_stream); the GEMM runs as t chunks of T/t rows, chunk 0 on the local slice, chunk i waiting for the
//     step that brought slice i, so step i + 1 moves while chunk i computes;
//   - pipeline (proj_fprop, fc2_fprop): the GEMM runs as userbuffers_pipeline_splits chunks, each chunk's partial
//     output reduce-scattered (`tp.reduce_scatter_chunk` of 1/splits of the bytes, tp_async_stream) while the next chunk
//     computes; the op after the block waits for the last chunk's reduction;
//   - bulk (qkv/fc1 dgrad and wgrad): the input re-gather overlapped with the dgrad GEMM and the input gradient's
//     reduce-scatter overlapped with the wgrad GEMM -- what column-parallel backward already does without the option.
// Each chunk is the vocabulary op (`qkv.fwd`, `proj.dgrad`, ...) at 1/chunks of its FLOPs and bytes, GEMM m / chunks.
// The output layer is Megatron's own ColumnParallelLinear, which does not use userbuffers: unchanged.
struct TpCommOverlap {
  bool enabled = false;
};
// TE's default num_splits for the pipelined reduce-scatter overlap (initialize_ub: 4 for method "pipeline").
inline constexpr int64_t userbuffers_pipeline_splits = 4;
// SMs TE holds back from the GEMMs of its "pipeline" and "bulk" overlaps (initialize_ub get_default_config:
// num_sm 16 and set_sm_margin for every method but ring_exchange; common/comm_gemm_overlap/comm_gemm_overlap.cpp
// `_math_sms = set_sm_margin ? sm_count - num_comm_sm : sm_count`, the SM count the GEMM is launched with):
// proj/fc2 forward and qkv/fc1 dgrad and wgrad run on S - 16 SMs (GemmShape::comm_sms).
inline constexpr int32_t userbuffers_margin_sms = 16;

// Forward of one layer (phase Forward, or Recompute when full recompute reruns it).
void emit_layer_forward(OpEmitter& e, const LayerShape& s, const LayerGroups& groups, TpCommOverlap overlap = {});

// The attention core is four unfused ops forward (attn.scores/softmax/dropout/context.fwd) or, with
// AttentionKernel::Flash, one fused op each way, `attn.flash.fwd` and `attn.flash.bwd`, costed by
// flash_attention_cost.hpp (causal tiles only; backward 2.5 x forward FLOPs with its internal Q K^T recompute).

// What a layer's backward reruns (phase Recompute) before the ops that need it: with full recompute its whole forward
// first (whole_layer, collectives and their overlap included); with selective recompute the pieces the plan names
// (ParallelPlan::recompute_modules, recompute_modules.hpp), each where Megatron-Core's checkpoint reruns it -- when
// backward reaches the module's output (or, for the output-discarding ones, its consumer's output):
//   attention_core     the attention core's forward (unfused ops, or the fused kernel with its CP ring) before its
//                      backward; without modules only the unfused core (Korthikanti et al. 2022, Section 4.3)
//   layernorm          MLA's separate input norm before the attention block's backward, a MoE layer's pre-MLP norm
//                      before the MLP block's (the other norms are fused into the next linear layer: nothing)
//   expert_activation  the experts' activation before their fc2 backward
//   mla_up_proj        the q and kv norms and up projections and RoPE before the attention core's backward
//   dense_mlp          a dense layer's norm, fc1 (with its SP gather), activation and fc2 (with its reduction)
//   moe                a MoE layer's router, permute, dispatch, experts, combine, unpermute and shared experts
//   shared_experts     the shared experts' fc1 (with its SP gather), activation and fc2 (with its reduction)
struct LayerRecompute {
  bool whole_layer = false;
  bool attention_core = false;
  bool layernorm = false;
  bool expert_activation = false;
  bool mla_up_proj = false;
  bool dense_mlp = false;
  bool moe = false;
  bool shared_experts = false;
};
// The plan's: whole_layer alone with Recompute::Full, the pieces with Recompute::Selective, nothing with None.
LayerRecompute layer_recompute(const ParallelPlan& plan);

// Backward of one layer, with the reruns `recompute` names (flash attention without "core_attn" has nothing to rerun:
// its backward recomputes the probabilities inside the fused kernel).
void emit_layer_backward(OpEmitter& e, const LayerShape& s, const LayerGroups& groups, const LayerRecompute& recompute,
                         TpCommOverlap overlap = {});

// Vocabulary-parallel embedding lookup + dropout (first model chunk), and its backward.
void emit_embedding_forward(OpEmitter& e, const LayerShape& s, int32_t tp_group);
void emit_embedding_backward(OpEmitter& e, const LayerShape& s, int32_t tp_group);

// Final layernorm, logits and fused vocabulary-parallel cross-entropy (last model chunk), and its backward.
void emit_output_forward(OpEmitter& e, const LayerShape& s, int32_t tp_group);
void emit_output_backward(OpEmitter& e, const LayerShape& s, int32_t tp_group);

} // namespace gputwin
