#include "gputwin/models/activation_memory.hpp"

#include "gputwin/models/checked_math.hpp"
#include "gputwin/models/parameter_count.hpp"
#include "gputwin/models/pipeline_schedule.hpp"

#include <algorithm>

namespace gputwin {

namespace {

// s b h: the elements of one hidden-state tensor of a micro-batch.
int64_t sbh(const GptConfig& model, const ParallelPlan& plan)
{
  return checked_product({model.seq_len, plan.micro_batch, model.hidden}, "--seq-len/--micro-batch/--hidden");
}

// a s^2 b: the elements of one attention-score tensor of a micro-batch, over all heads.
int64_t as2b(const GptConfig& model, const ParallelPlan& plan)
{
  return checked_product({model.heads, model.seq_len, model.seq_len, plan.micro_batch},
                         "--heads/--seq-len/--micro-batch");
}

// Bytes divided by t only where sequence parallelism shards them.
int64_t outside_tp_region(int64_t bytes, const ParallelPlan& plan)
{
  return plan.sequence_parallel() ? bytes / plan.tp : bytes;
}

// a s b: the rows of the attention scores of a micro-batch, over all heads (one log-sum-exp each).
int64_t asb(const GptConfig& model, const ParallelPlan& plan)
{
  return checked_product({model.heads, model.seq_len, plan.micro_batch}, "--heads/--seq-len/--micro-batch");
}

// What the attention core itself stores inside the TP region, before the split by t: 5 a s^2 b unfused
// (softmax output, dropout mask, dropout output); 4 a s b with flash (fp32 log-sum-exp), whose RNG state is
// added per rank by the callers.
int64_t attention_core_bytes(const GptConfig& model, const ParallelPlan& plan)
{
  if (plan.attention == AttentionKernel::Flash)
    return checked_product({4, asb(model, plan)}, "activations");
  return checked_product({5, as2b(model, plan)}, "activations");
}

int64_t flash_state_bytes(const ParallelPlan& plan)
{
  return plan.attention == AttentionKernel::Flash ? flash_rng_state_bytes : 0;
}

int64_t no_recompute_layer_bytes(const GptConfig& model, const ParallelPlan& plan)
{
  // Section 4.1: 34 sbh + 5 a s^2 b per layer (attention 11 sbh + 5 a s^2 b, MLP 19 sbh, layernorms 4 sbh).
  // 24 sbh and the attention core's 5 a s^2 b lie inside the tensor-parallel regions and split by t
  // (Section 4.2.1); 10 sbh -- the two layernorm inputs and the two post-block dropouts -- lie outside,
  // replicated under plain TP and sharded by sequence parallelism (Section 4.2.2).
  // With flash attention the core's 5 a s^2 b is 4 a s b + the RNG state (activation_memory.hpp).
  const int64_t inside = checked_sum(checked_product({24, sbh(model, plan)}, "activations"),
                                     attention_core_bytes(model, plan), "activations");
  const int64_t outside = checked_product({10, sbh(model, plan)}, "activations");
  return checked_sum(inside / plan.tp + outside_tp_region(outside, plan), flash_state_bytes(plan), "activations");
}

} // namespace

int64_t activation_bytes_per_layer(const GptConfig& model, const ParallelPlan& plan)
{
  switch (plan.recompute) {
  case Recompute::None: return no_recompute_layer_bytes(model, plan);
  case Recompute::Selective:
    // Flash attention stores nothing s x s for selective recompute to drop: the same bytes as no recompute.
    if (plan.attention == AttentionKernel::Flash)
      return no_recompute_layer_bytes(model, plan);
    // The attention core (softmax output 2 a s^2 b, its dropout mask a s^2 b, dropout output 2 a s^2 b) is not
    // kept: 24 sbh / t inside the TP blocks, 10 sbh outside.
    return checked_product({24, sbh(model, plan)}, "activations") / plan.tp +
           outside_tp_region(checked_product({10, sbh(model, plan)}, "activations"), plan);
  case Recompute::Full: return outside_tp_region(2 * sbh(model, plan), plan);
  }
  return 0;
}

int64_t recompute_workspace_bytes(const GptConfig& model, const ParallelPlan& plan)
{
  switch (plan.recompute) {
  case Recompute::None: return 0;
  case Recompute::Selective:
    if (plan.attention == AttentionKernel::Flash)
      return 0; // nothing recomputed outside the fused backward
    return checked_product({5, as2b(model, plan)}, "activations") / plan.tp;
  case Recompute::Full: return no_recompute_layer_bytes(model, plan);
  }
  return 0;
}

StageActivations stage_activation_memory(const GptConfig& model, const ParallelPlan& plan, int64_t stage)
{
  const PipelineShape shape = pipeline_shape(plan);
  StageActivations a;
  a.bytes_per_layer = activation_bytes_per_layer(model, plan);
  a.layers_per_chunk = model.layers / (plan.pp * shape.chunks);
  a.chunks_in_flight = peak_in_flight(shape, stage);
  a.layer_bytes = checked_product({a.bytes_per_layer, a.layers_per_chunk, a.chunks_in_flight}, "activations");

  if (stage == 0) {
    // Embedding dropout mask, 1 byte per element (s b h, sharded by SP), kept for each micro-batch whose
    // first chunk is in flight: p of them with 1F1B, as in the paper's s b h p / t term.
    const std::vector<PipelineStep> steps = stage_schedule(shape, 0);
    int64_t in_flight = 0, peak = 0;
    for (const PipelineStep& s : steps) {
      if (s.chunk != 0)
        continue;
      in_flight += s.phase == PipelinePhase::Forward ? 1 : -1;
      peak = std::max(peak, in_flight);
    }
    a.embedding_bytes = checked_product({outside_tp_region(sbh(model, plan), plan), peak}, "activations");
  }
  if (stage == plan.pp - 1) {
    // Final layernorm input and output-layer input (2 sbh each, sharded by SP) and the fp32 logits of the
    // vocabulary-parallel loss (4 s b v / t), for the one micro-batch whose last chunk is in flight:
    // 4 sbh / t (1 + v / h) with SP, the paper's delta(p = 1) term.
    const int64_t logits =
        checked_product({4, model.seq_len, plan.micro_batch, padded_vocab(model, plan.tp)}, "activations") / plan.tp;
    a.output_bytes = checked_sum(outside_tp_region(4 * sbh(model, plan), plan), logits, "activations");
  }
  a.total_bytes =
      checked_sum(checked_sum(a.layer_bytes, a.embedding_bytes, "activations"), a.output_bytes, "activations");
  return a;
}

} // namespace gputwin
