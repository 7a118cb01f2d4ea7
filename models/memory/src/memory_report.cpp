#include "gputwin/models/memory_report.hpp"

#include "gputwin/common/checked_math.hpp"

namespace gputwin {

StageMemory stage_memory(const GptConfig& model, const ParallelPlan& plan, int64_t stage)
{
  StageMemory m;
  m.stage = stage;
  m.activations = stage_activation_memory(model, plan, stage);
  m.recompute_workspace_bytes = recompute_workspace_bytes(model, plan);
  m.state = stage_model_state_memory(model, plan, stage);
  m.total_bytes = checked_sum(checked_sum(m.activations.total_bytes, m.recompute_workspace_bytes, "memory"),
                              m.state.total_bytes, "memory");
  return m;
}

std::vector<StageMemory> all_stage_memory(const GptConfig& model, const ParallelPlan& plan)
{
  std::vector<StageMemory> stages;
  stages.reserve(static_cast<size_t>(plan.pp));
  for (int64_t stage = 0; stage < plan.pp; ++stage)
    stages.push_back(stage_memory(model, plan, stage));
  return stages;
}

StageMemory busiest_stage_memory(const GptConfig& model, const ParallelPlan& plan)
{
  // Stage 0 holds the most micro-batches in flight and the embedding, the last stage the logits; with uneven
  // stages a middle stage (more layers, almost as many in flight) can need the most: every stage is looked at.
  StageMemory busiest = stage_memory(model, plan, 0);
  for (int64_t stage = 1; stage < plan.pp; ++stage) {
    StageMemory m = stage_memory(model, plan, stage);
    if (m.total_bytes > busiest.total_bytes)
      busiest = std::move(m);
  }
  return busiest;
}

} // namespace gputwin
