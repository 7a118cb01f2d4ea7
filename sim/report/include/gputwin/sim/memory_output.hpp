#pragma once
// What `gputwin memory` reports for the busiest pipeline stage (models/memory_report.hpp): every term per GPU, the
// reserve kept for what the framework does not allocate, and whether it fits the cluster's GPU -- as a table (bytes
// and GiB) or a JSON object (bytes as integers, with the model, plan and cluster).

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/parallel_plan.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <ostream>

namespace gputwin::sim {

inline constexpr double bytes_per_gib = 1024.0 * 1024.0 * 1024.0;

// The table, ending with the verdict: "fits: N GiB (allocated + reserve) of the C GiB of one GPU (cluster), headroom
// H GiB (P %)" or "does not fit: ... short by S GiB".
void print_memory_table(std::ostream& out, const GptConfig& model, const ParallelPlan& plan, const StageMemory& m,
                        const MemoryReserve& reserve, const topo::ClusterSpec& cluster);

// The JSON object: parameters (total, activated, per GPU, dense/expert split), each memory term, reserve, headroom
// (negative: short by that much) and "fits".
void write_memory_json(std::ostream& out, const GptConfig& model, const ParallelPlan& plan, const StageMemory& m,
                       const MemoryReserve& reserve, const topo::ClusterSpec& cluster);

} // namespace gputwin::sim
