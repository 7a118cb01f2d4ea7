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
  int64_t weight_bytes = 0;    // parameters x 2 (+ 2 per layer parameter with FP8: the cached FP8 weight and transpose)
  int64_t gradient_bytes = 0;  // parameters x 4
  int64_t optimizer_bytes = 0; // parameters x 12, divided over the dp x cp replicas (rounded up) with ZeRO-1
  int64_t total_bytes = 0;
};

// Model state of one GPU holding `parameters`, under `plan`'s ZeRO stage and data-parallel size.
ModelStateMemory model_state_memory(int64_t parameters, const ParallelPlan& plan,
                                    const StateBytesPerParameter& bytes = {});

// Model state of one GPU of pipeline stage `stage` (stage_parameters_per_gpu).
ModelStateMemory stage_model_state_memory(const GptConfig& model, const ParallelPlan& plan, int64_t stage,
                                          const StateBytesPerParameter& bytes = {});

} // namespace gputwin
