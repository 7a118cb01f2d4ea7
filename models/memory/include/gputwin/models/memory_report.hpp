#pragma once
// Per-GPU memory of each pipeline stage: activations + model state, and the busiest stage.

#include "gputwin/models/activation_memory.hpp"
#include "gputwin/models/model_state_memory.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gputwin {

struct StageMemory {
  int64_t stage = 0;
  StageActivations activations;
  int64_t recompute_workspace_bytes = 0; // transient, one layer of one micro-batch (recompute_workspace_bytes)
  // The backward's other transients at the peak (Megatron-Core + TE; 0 for the paper's stack): the larger of a
  // layer's (layer_backward_workspace_bytes, next to the recompute workspace) and, on the last stage, the loss
  // and output layer's (output_backward_workspace_bytes, before any layer is recomputed), less the recompute
  // workspace -- so that the sum below is the larger of the two moments.
  int64_t backward_workspace_bytes = 0;
  ModelStateMemory state;
  // activations.total_bytes + recompute_workspace_bytes + backward_workspace_bytes + state.total_bytes: the peak
  // of what the framework allocates (torch.cuda.max_memory_allocated), without the reserve below
  int64_t total_bytes = 0;
};

// What a GPU needs beyond the allocated peak: the CUDA context and library workspaces (not allocated through the
// framework's allocator), NCCL's buffers, and the caching allocator's fragmentation (reserved - allocated).
struct MemoryReserve {
  std::string framework;
  int64_t context_bytes = 0; // CUDA context, cuBLAS/cuDNN/TE workspaces
  int64_t nccl_bytes = 0;    // NCCL communicator buffers
  double fragmentation = 0;  // fraction of the allocated peak the caching allocator reserves besides
  std::string source;
  // Bytes reserved next to an allocated peak of `allocated_bytes`.
  int64_t bytes(int64_t allocated_bytes) const;
};

// The default reserve of a framework (a built-in --framework name; other names get the PyTorch frameworks'):
// "none" reserves nothing, "gputwin-engine" the context and NCCL (its buffers are allocated once, no caching
// allocator), the PyTorch frameworks (megatron-lm, megatron-core, nemo, megatron-deepspeed, torchtitan) all three.
MemoryReserve default_memory_reserve(const std::string& framework);

// A flat reserve of `bytes` (--memory-reserve).
MemoryReserve flat_memory_reserve(int64_t bytes);

// Memory of one GPU of pipeline stage `stage`. REQUIRES: validate_plan(model, plan) passed.
StageMemory stage_memory(const GptConfig& model, const ParallelPlan& plan, int64_t stage);

// Every stage, first to last.
std::vector<StageMemory> all_stage_memory(const GptConfig& model, const ParallelPlan& plan);

// The stage with the largest total (the first such stage on ties) — the one that decides whether a plan fits.
StageMemory busiest_stage_memory(const GptConfig& model, const ParallelPlan& plan);

} // namespace gputwin
