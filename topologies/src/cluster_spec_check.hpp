#pragma once
// Consistency of a ClusterSpec: ranges, and the rules that tie fields together (PCIe switches dividing the
// GPUs, the NIC rail map, the fat tree holding the nodes). Shared by the YAML loader, which names the file
// location of the field, and by ClusterGraph, which checks specs built in code.

#include "gputwin/topologies/cluster_spec.hpp"

#include <optional>
#include <string>

namespace gputwin::topo {

struct SpecProblem {
  std::string field;   // dotted YAML path: "node.pcie.switches", "node.nics.gpus.3.0"
  std::string message; // what is wrong and what was expected, e.g. "3 does not divide 8 GPUs (expected ...)"
};

// Limits that keep the graph a size a workstation builds in seconds.
constexpr int max_gpus_per_node = 1024;
constexpr int max_nics_per_node = 1024;
constexpr int max_switch_radix = 4096;
constexpr int64_t max_cluster_gpus = int64_t{1} << 20;

// The first problem of `spec`, in the order of the YAML file, or nullopt when it is consistent.
std::optional<SpecProblem> find_spec_problem(const ClusterSpec& spec);

// Throws InputError "cluster 'NAME': FIELD: MESSAGE" for the first problem of `spec` (for specs built in code;
// the YAML loader reports the file location instead).
void require_consistent(const ClusterSpec& spec);

} // namespace gputwin::topo
