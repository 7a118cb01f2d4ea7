#pragma once
// Activation memory of a GPT under tensor, sequence and pipeline parallelism and activation recompute:
// Korthikanti et al. 2022, Section 4 and Table 2. 16-bit activations (2 bytes), 1-byte dropout masks.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <cstdint>

namespace gputwin {

// Bytes one GPU stores for backward per transformer layer and micro-batch (paper Table 2):
//   no parallelism (t = 1)          s b h (34 + 5 a s / h)
//   tensor parallel                 s b h (10 + 24/t + 5 a s / (h t))
//   tensor + sequence parallel      s b h (34/t + 5 a s / (h t))
//   TP + selective recompute        s b h (10 + 24/t)
//   TP + SP + selective recompute   s b h 34/t
//   full recompute                  2 s b h   (the layer input; 2 s b h / t with SP, whose input is sharded)
// Computed in exact integers: h and a are multiples of t, so every split is exact.
int64_t activation_bytes_per_layer(const GptConfig& model, const ParallelPlan& plan);

// The transient bytes a layer's backward needs on top of what is stored, for one micro-batch: with
// selective recompute the recomputed attention core (5 a s^2 b / t), with full recompute the whole layer's
// activations rebuilt by the forward rerun (Table 2 without recompute); 0 without recompute.
int64_t recompute_workspace_bytes(const GptConfig& model, const ParallelPlan& plan);

// What a pipeline stage stores at its peak, one GPU.
struct StageActivations {
  int64_t bytes_per_layer = 0;  // Table 2, one micro-batch
  int64_t layers_per_chunk = 0; // L / (p v)
  int64_t chunks_in_flight = 0; // peak (micro-batch, chunk) pairs stored, from the schedule
  int64_t layer_bytes = 0;      // bytes_per_layer x layers_per_chunk x chunks_in_flight
  int64_t embedding_bytes = 0;  // embedding-dropout masks of the micro-batches in flight (stage 0)
  int64_t output_bytes = 0;     // final layernorm + output-layer inputs and fp32 logits (last stage)
  int64_t total_bytes = 0;      // layer_bytes + embedding_bytes + output_bytes
};

// Peak stored activations of pipeline stage `stage`. With 1F1B and at least p micro-batches the first stage
// holds L layers' worth, s b h L / t (34 + 5 a s / h) with TP+SP; the interleaved schedule multiplies that
// by (1 + (p - 1)/(p v)); GPipe holds all m micro-batches. The extra terms of Section 4.2.3,
// (s b h L / t)(p / L + delta(p = 1) (4 / L)(1 + v / h)), are embedding_bytes and output_bytes.
StageActivations stage_activation_memory(const GptConfig& model, const ParallelPlan& plan, int64_t stage);

} // namespace gputwin
