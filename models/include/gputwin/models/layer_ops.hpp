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


// Forward of one layer (phase Forward, or Recompute when full recompute reruns it). `tp_group` is the index
// of the rank's TP communicator (ignored when t = 1).
void emit_layer_forward(OpEmitter& e, const LayerShape& s, int32_t tp_group);

// The attention core is four unfused ops forward (attn.scores/softmax/dropout/context.fwd) or, with
// AttentionKernel::Flash, one fused op each way, `attn.flash.fwd` and `attn.flash.bwd`, costed by
// flash_attention_cost.hpp (causal tiles only; backward 2.5 x forward FLOPs with its internal Q K^T recompute).

// Backward of one layer; with selective recompute the unfused attention core's forward is rerun first (flash
// attention has nothing to rerun: its backward recomputes the probabilities inside the fused kernel).
void emit_layer_backward(OpEmitter& e, const LayerShape& s, int32_t tp_group, Recompute recompute);

// Vocabulary-parallel embedding lookup + dropout (first model chunk), and its backward.
void emit_embedding_forward(OpEmitter& e, const LayerShape& s, int32_t tp_group);
void emit_embedding_backward(OpEmitter& e, const LayerShape& s, int32_t tp_group);

// Final layernorm, logits and fused vocabulary-parallel cross-entropy (last model chunk), and its backward.
void emit_output_forward(OpEmitter& e, const LayerShape& s, int32_t tp_group);
void emit_output_backward(OpEmitter& e, const LayerShape& s, int32_t tp_group);

} // namespace gputwin
