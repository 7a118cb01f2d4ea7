#include "gputwin/engine/parallel/rank_context.hpp"

#include <algorithm>

namespace gputwin::engine {

RankContext::RankContext(const GptConfig& model_, const ParallelPlan& plan_, const EngineOptions& options_,
                         const RankGrid& grid_, int world_rank_, Backend& backend_, MemoryAccountant& memory_,
                         Tracer& tracer_)
    : model(model_), plan(plan_), options(options_), grid(grid_), world_rank(world_rank_),
      coords(grid_.coords(world_rank_)), backend(backend_), memory(memory_), tracer(tracer_),
      shape(layer_shape(model_, plan_))
{
  tracer.use_clock(backend.op_clock()); // GPU ops are timed on the GPU
}

int64_t RankContext::vocab_owned() const
{
  return std::clamp<int64_t>(model.vocab - vocab_start(), 0, vocab_local());
}

int64_t RankContext::sample_in_iteration(int64_t micro_batch) const
{
  return coords.dp * (plan.effective_global_batch() / plan.dp) + micro_batch * plan.micro_batch;
}

int64_t RankContext::sample_base(int64_t micro_batch) const
{
  return iteration * plan.effective_global_batch() + sample_in_iteration(micro_batch);
}

} // namespace gputwin::engine
