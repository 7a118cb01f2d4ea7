#pragma once
// Model-state memory with mixed-precision Adam: weights, gradients and optimizer states per GPU.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <cstdint>

namespace gputwin {

// Bytes per parameter as Megatron-LM keeps them with bf16 training (parallelism primer; Korthikanti et al.
// 2022 Figure 1 uses the same 18 bytes): bf16 weights, fp32 gradient buffer, and fp32 master weights +
// Adam momentum + variance.
struct StateBytesPerParameter {
  int64_t weight = 2;
  int64_t gradient = 4;
  int64_t optimizer = 12;
};

// With ZeRO stage z each sharded term is divided over the dp x cp ranks that hold the same parameters, rounded
// up (every rank owns a whole shard): z >= 1 the optimizer states, z >= 2 the gradients, z = 3 the weights.
struct ModelStateMemory {
  int64_t parameters = 0;      // of this GPU's model-parallel slice (under ZeRO-3 it stores a 1/(dp x cp) shard)
  // parameters x 2 (BF16); with --fp8-param-gather the layers' weights x 1 (FP8 only); 0 with --fsdp (FSDP2 keeps
  // no BF16 copy: its FP32 parameter is the master weight, in optimizer_bytes); sharded with ZeRO-3
  int64_t weight_bytes = 0;
  int64_t gradient_bytes = 0;  // parameters x 4 (FP32 main grads), x 2 with --grad-reduce-in-bf16; ZeRO-2/3 sharded
  int64_t optimizer_bytes = 0; // parameters x 12 (FP32 master weight, Adam momentum and variance); ZeRO-1/2/3 sharded
  // Transformer Engine's FP8 weight caches, kept from step to step (module/base.py get_weight_workspace caches
  // the cast under "weight" while Megatron-Core passes is_first_microbatch, extensions/transformer_engine.py;
  // Hopper's FP8 GEMMs take only TN operands, so the transpose is kept too): 2 bytes per layer parameter, or 1
  // (the transpose) when the FP8 weight itself is the parameter (--fp8-param-gather). ZeRO-3: only the gathered
  // layers' transposes, 1 byte each (Megatron-FSDP releases the transpose cache of a quantized parameter when it
  // reshards, megatron_fsdp.md "Post-Forward"). MXFP8 and NVFP4 (--precision): the same copies in their format
  // with their block scales (quantized_tensor_bytes), both quantized from BF16.
  int64_t fp8_cache_bytes = 0;
  // Transformer Engine's weight-gradient placeholders: with gradient-accumulation fusion the wgrad GEMM writes
  // the FP32 main_grad and TE hands autograd a BF16 tensor of the weight's shape, cached once per shape
  // (module/base.py get_dummy_wgrad): one layer's linear weights x 2 per GPU. Megatron-Core + TE only.
  int64_t wgrad_placeholder_bytes = 0;
  // ZeRO-3: the whole (unsharded) weights of the two units alive at once -- the one computing and the next one,
  // prefetched (peak_two_unit_bytes) -- in the gather precision: BF16, the plan's quantized format (scales
  // included) for the layers with --fp8-param-gather.
  int64_t gathered_weight_bytes = 0;
  // ZeRO-2/3: the whole gradients of two units before their reduce-scatter (the one whose backward writes them and
  // the previous one, being reduced), at the gradient's bytes per parameter.
  int64_t gathered_gradient_bytes = 0;
  int64_t total_bytes = 0;
};

// Model state of one GPU holding `parameters`, under `plan`'s ZeRO stage (--fsdp: no BF16 weight copy),
// data-parallel size and gradient precision (bytes.gradient is 2 with plan.grad_reduce_bf16); no gathered units.
ModelStateMemory model_state_memory(int64_t parameters, const ParallelPlan& plan,
                                    const StateBytesPerParameter& bytes = {});

// Model state of a GPU holding `dense_parameters` (ZeRO over dp x cp, as model_state_memory) and
// `expert_parameters` (the routed experts: ZeRO-1 shards their optimizer states over the plan.expert_dp() ranks
// that hold the same experts; MoE plans run ZeRO 0 or 1). Expert optimizer bytes fall as 1/(ep etp) with the
// experts' split and as 1/edp with ZeRO-1.
ModelStateMemory expert_model_state_memory(int64_t dense_parameters, int64_t expert_parameters,
                                           const ParallelPlan& plan, const StateBytesPerParameter& bytes = {});

// Model state of one GPU of pipeline stage `stage` (stage_parameter_split: the experts by
// expert_model_state_memory), with TE's caches and, under ZeRO-2/3, the gathered units (sharded_units).
ModelStateMemory stage_model_state_memory(const GptConfig& model, const ParallelPlan& plan, int64_t stage,
                                          const StateBytesPerParameter& bytes = {});

} // namespace gputwin
