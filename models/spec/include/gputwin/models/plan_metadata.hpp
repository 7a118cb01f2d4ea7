#pragma once
// The model and parallel plan of a run as an op graph's metadata (string keys and values): written in one place
// for the engine's traces and the workload generator's graphs, and read back in one place by replay, scale-out
// and compare. Keys: model, hidden, heads, layers, seq_len, vocab; tp, pp, dp, micro_batch, global_batch,
// micro_batches, sequence_parallel (true|false), recompute, attention, schedule, chunks, zero; where set: cp,
// pp_first_stage_layers, pp_last_stage_layers, fp8 (true: FP8 GEMMs) with fp8_recipe (tensorwise; delayed is not
// written) or precision (mxfp8|nvfp4), fp8_param_gather, grad_reduce_bf16, cross_entropy_fusion, fsdp (zero is 0-3).

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <map>
#include <string>

namespace gputwin {

using Metadata = std::map<std::string, std::string>;

// Adds the model's and the plan's keys to `metadata` (replacing any already there).
void write_plan_metadata(const GptConfig& model, const ParallelPlan& plan, Metadata& metadata);

struct PlanMetadata {
  GptConfig model;
  ParallelPlan plan;
};

// The model and plan `metadata` describe. Keys written before a plan field existed take its default then
// (sequence_parallel false, recompute none, attention unfused, schedule 1f1b, chunks 1, zero 0); the sizes are
// required. Throws InputError "`what`: the metadata has no 'tp' (...)" or "... 'tp' is not an integer: 'x'"
// or names the value a field does not accept. The result is not validated (validate_plan).
PlanMetadata read_plan_metadata(const Metadata& metadata, const std::string& what);

} // namespace gputwin
