#pragma once
// `gputwin topo`'s report of a cluster graph (ClusterGraph::summary): GPUs, NVLink domains, switches, NICs, the fabric,
// link counts, NVLink, injection and bisection bandwidth -- as a table or a JSON object (GB/s = 1e9 bytes/s, per
// direction; JSON keys ending in _gbps).

#include "gputwin/topologies/cluster_graph.hpp"

#include <ostream>

namespace gputwin::topo {

void print_summary_table(std::ostream& out, const ClusterGraph& graph);
void write_summary_json(std::ostream& out, const ClusterGraph& graph);

} // namespace gputwin::topo
