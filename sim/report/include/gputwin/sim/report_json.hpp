#pragma once
// The parts every JSON report repeats (simulate, memory, replay, collective): what ran -- the model's shape, the
// plan (search_core's write_plan_json) and the cluster -- so a report stands on its own.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/topologies/cluster_spec.hpp"
#include "gputwin/common/json_writer.hpp"

namespace gputwin::sim {

// The member "model": {name, hidden, heads, layers, seq_len, vocab}.
void write_model_json(JsonWriter& json, const GptConfig& model);

// The member "cluster": {name, nodes, gpus_per_node, gpus, gpu, gpu_memory_bytes}.
void write_cluster_json(JsonWriter& json, const topo::ClusterSpec& cluster);

} // namespace gputwin::sim
