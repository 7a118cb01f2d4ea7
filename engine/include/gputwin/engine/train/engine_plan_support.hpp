#pragma once
// What the engine runs of the plans and models the shared flags describe (models/plan_flags.hpp): every
// architecture of GptConfig, tensor/sequence/pipeline/data parallelism with even or uneven pipeline stages;
// ZeRO 0 and 1; not yet context parallelism (--cp), FP8 or block-scaled linear layers (--fp8, --precision) or
// sharded gradients and weights (--zero 2|3, --fsdp), which the workload generator models.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

namespace gputwin::engine {

// Throws InputError, one line naming the flag, for a plan the engine cannot run yet, or whose MLP width does not
// split over the tensor-parallel ranks (each rank holds F/t columns of fc1 and rows of fc2; models' validate_plan
// checks heads and query groups, not F).
void check_engine_supports_plan(const GptConfig& model, const ParallelPlan& plan);

} // namespace gputwin::engine
