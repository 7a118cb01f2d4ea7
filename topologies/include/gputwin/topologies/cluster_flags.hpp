#pragma once
// The cluster flags every simulator subcommand shares (`gputwin topo`, `gputwin collective`, ...):
//
//   --cluster NAME|FILE   built-in cluster (dgx-a100, dgx-b200, dgx-h100, dgx-h200, ...) or a cluster .yaml file; default dgx-a100
//   --nodes N             number of nodes (default: the file's `nodes`)
//   --set KEY=VALUE       override a field of the cluster file before it is validated (repeatable)
//   --degrade-link NAME=FACTOR, --fail-link NAME, --fail-nic NODE:NIC   faults on top of the file (repeatable;
//                         ClusterSpec::faults, applied by ClusterGraph)

#include "gputwin/common/arg_parser.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <string>

namespace gputwin::topo {

// The cluster used when --cluster is not given.
inline constexpr const char* default_cluster = "dgx-a100";

// Adds a "cluster" section with --cluster, --nodes, --set and the fault flags to `parser`. `default_text` says which cluster a
// command takes without --cluster, for its --help (default: "default dgx-a100").
void add_cluster_flags(cli::ArgParser& parser, const std::string& default_text = "");

// The cluster the flags describe, loaded and validated (load_cluster). Throws InputError naming the flag
// ("--nodes: expected a positive integer, got 0") or the file location of a bad field.
ClusterSpec read_cluster(const cli::ParsedArgs& args);

// The same cluster sized to `nodes` nodes instead of --nodes (> 0), the fault flags kept.
ClusterSpec read_cluster(const cli::ParsedArgs& args, int nodes);

// The cluster the flags name, not yet loaded: --cluster, --nodes (0 when not given), --set, the fault flags.
ClusterRequest read_cluster_request(const cli::ParsedArgs& args);

// The fault flags as given: --degrade-link NAME=FACTOR (FACTOR > 0), --fail-link NAME, --fail-nic NODE:NIC.
// Names are checked against the graph later (ClusterGraph); throws InputError on a malformed value.
FabricFaults read_fabric_faults(const cli::ParsedArgs& args);

} // namespace gputwin::topo
