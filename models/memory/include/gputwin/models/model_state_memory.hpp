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

struct ModelStateMemory {
  int64_t parameters = 0;      // held by this GPU
  int64_t weight_bytes = 0;    // parameters x 2; with --fp8-param-gather the layers' weights x 1 (FP8 only)
  int64_t gradient_bytes = 0;  // parameters x 4 (FP32 main grads), x 2 with --grad-reduce-in-bf16
  int64_t optimizer_bytes = 0; // parameters x 12, divided over the dp x cp replicas (rounded up) with ZeRO-1
  // Transformer Engine's FP8 weight caches, kept from step to step (module/base.py get_weight_workspace caches
  // the cast under "weight" while Megatron-Core passes is_first_microbatch, extensions/transformer_engine.py;
  // Hopper's FP8 GEMMs take only TN operands, so the transpose is kept too): 2 bytes per layer parameter, or 1
  // (the transpose) when the FP8 weight itself is the parameter (--fp8-param-gather).
  int64_t fp8_cache_bytes = 0;
  // Transformer Engine's weight-gradient placeholders: with gradient-accumulation fusion the wgrad GEMM writes
  // the FP32 main_grad and TE hands autograd a BF16 tensor of the weight's shape, cached once per shape
  // (module/base.py get_dummy_wgrad): one layer's linear weights x 2 per GPU. Megatron-Core + TE only.
  int64_t wgrad_placeholder_bytes = 0;
  int64_t total_bytes = 0;
};

// Model state of one GPU holding `parameters`, under `plan`'s ZeRO stage, data-parallel size and gradient
// precision (bytes.gradient is 2 with plan.grad_reduce_bf16).
ModelStateMemory model_state_memory(int64_t parameters, const ParallelPlan& plan,
                                    const StateBytesPerParameter& bytes = {});

// Model state of one GPU of pipeline stage `stage` (stage_parameters_per_gpu).
ModelStateMemory stage_model_state_memory(const GptConfig& model, const ParallelPlan& plan, int64_t stage,
                                          const StateBytesPerParameter& bytes = {});

} // namespace gputwin
