#pragma once
// Per-GPU memory of each pipeline stage: activations + model state, and the busiest stage.

#include "gputwin/models/activation_memory.hpp"
#include "gputwin/models/model_state_memory.hpp"

#include <cstdint>
#include <vector>

namespace gputwin {

struct StageMemory {
  int64_t stage = 0;
  StageActivations activations;
  int64_t recompute_workspace_bytes = 0; // transient, one layer of one micro-batch (recompute_workspace_bytes)
  ModelStateMemory state;
  // activations.total_bytes + recompute_workspace_bytes + state.total_bytes
  int64_t total_bytes = 0;
};

// Memory of one GPU of pipeline stage `stage`. REQUIRES: validate_plan(model, plan) passed.
StageMemory stage_memory(const GptConfig& model, const ParallelPlan& plan, int64_t stage);

// Every stage, first to last.
std::vector<StageMemory> all_stage_memory(const GptConfig& model, const ParallelPlan& plan);

// The stage with the largest total (the first such stage on ties) — the one that decides whether a plan fits.
StageMemory busiest_stage_memory(const GptConfig& model, const ParallelPlan& plan);

} // namespace gputwin
