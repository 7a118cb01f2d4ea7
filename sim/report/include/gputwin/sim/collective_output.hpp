#pragma once
// `gputwin collective`'s report: the nccl-tests table (size, time, algbw, busbw, algorithm, protocol) with how much was
// simulated, or a JSON object (cluster, op, ranks, forced choices, "results", and the link report's members).

#include "gputwin/sim/collective_benchmark.hpp"
#include "gputwin/sim/link_report.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <ostream>
#include <vector>

namespace gputwin::sim {

void print_collective_table(std::ostream& out, const topo::ClusterSpec& cluster, CollectiveOp op, int64_t ranks,
                            const std::vector<CollectivePlan>& plans, const std::vector<CollectiveResultRow>& rows,
                            const CollectiveRun& run);

// `links` (may be null): the link report's members.
void write_collective_json(std::ostream& out, const topo::ClusterSpec& cluster, const CollectivePlacement& placement,
                           const CollectiveRequest& request, const std::vector<CollectiveResultRow>& rows,
                           const topo::ClusterGraph& graph, const LinkReport* links);

} // namespace gputwin::sim
