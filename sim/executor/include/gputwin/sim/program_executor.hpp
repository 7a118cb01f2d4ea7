#pragma once
// Executes rank programs (the op-graph form of traces/op_graph.hpp) on the SimGrid platform: compute ops take
// the duration the caller gives them, communication ops run their flows (from a CommSource) on the shared
// links; streams of a rank run concurrently, ordered by the ops' dependencies; collectives start when every
// simulated member has reached them; pipeline messages are sent eagerly and received in order.
// `simulate` (a generated workload) and `replay` (a captured trace) both run through here.

#include "gputwin/sim/comm_source.hpp"
#include "gputwin/sim/iteration_result.hpp"
#include "gputwin/topologies/cluster_graph.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace gputwin::sim {

// Runs `programs` (rank r on GPU r of `graph`; `groups` their communicators) once. `hosts` (one per program,
// or empty: no host model) issue the ops as framework_profile.hpp defines. The programs must be
// deadlock-free (check_progress). One per process (SimGrid 3.32).
IterationResult execute_programs(const topo::ClusterGraph& graph, std::vector<traces::RankProgram> programs,
                                 const std::vector<traces::CommGroup>& groups, CommSource& comm,
                                 const ComputeDuration& compute_s, const IterationOptions& options = {},
                                 const std::vector<HostProgram>& hosts = {});

} // namespace gputwin::sim
