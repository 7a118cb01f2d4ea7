#pragma once
// The parts every JSON report repeats (simulate, memory, replay, collective): what ran -- the model's shape, the
// plan and the cluster -- so a report stands on its own.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/topologies/cluster_spec.hpp"
#include "gputwin/common/json_writer.hpp"

namespace gputwin::sim {

// The member "model": {name, hidden, heads, layers, seq_len, vocab}.
void write_model_json(JsonWriter& json, const GptConfig& model);

// The member "cluster": {name, nodes, gpus_per_node, gpus, gpu, gpu_memory_bytes}.
void write_cluster_json(JsonWriter& json, const topo::ClusterSpec& cluster);

// The member "plan": {tp, pp, dp, micro_batch, global_batch, schedule, chunks, recompute, sp, zero, attention},
// as every report prints it.
void write_plan_json(JsonWriter& json, const ParallelPlan& p);

// The members "tp_comm_overlap", "overlap_grad_reduce", "overlap_param_gather" (booleans, as simulate --json names
// them): the Megatron-Core overlaps a searched plan runs with.
void write_overlaps_json(JsonWriter& json, const WorkloadOptions& options);

// The overlaps that are on, for a table: "tp,grad,param" (--tp-comm-overlap, --overlap-grad-reduce,
// --overlap-param-gather), or "none".
std::string overlaps_text(const WorkloadOptions& options);

} // namespace gputwin::sim
