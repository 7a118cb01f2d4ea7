#pragma once
// The fast executor: the same rank programs, host issue model and stage report as the SimGrid executor
// (program_executor.hpp), computed as longest paths through the op graph instead of simulated -- no SimGrid,
// no actors, about 20 ns per op. Every constraint of the flow-level executor is kept exactly (stream order,
// cross-stream dependencies, host issue times and synchronisations, collectives starting when their last
// member arrives, receives ending when their message has arrived); only the network differs: each
// communication op takes its flows' contention-free time (the busiest link of its own flows, plus route and
// NCCL latency), so traffic of different ops never slows each other down. On one node, where TP, PP and DP
// traffic rarely meet on a link, it agrees with the flow-level simulation; `search` ranks plans with it and
// `calibrate --iterations` fits with it. Plain C++.

#include "gputwin/sim/comm_source.hpp"
#include "gputwin/sim/iteration_result.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <memory>
#include <vector>

namespace gputwin::sim {

// Seconds a communication op's flows take alone on `graph`: for every link the sum of its flows' bytes over
// the link's NCCL bandwidth, the busiest link's time, plus the longest route latency and `work.latency_s`.
double contention_free_duration_s(const topo::ClusterGraph& graph, const CommWork& work);

// The effective bandwidth of a directed link: line rate x the NCCL efficiency of its kind (cluster `nccl:`).
double nccl_link_bytes_per_s(const topo::ClusterSpec& spec, const topo::Link& link);

// Seconds communication op `op` of program `program` takes.
using CommDuration = std::function<double(size_t program, const traces::Op& op)>;

// The programs' structure compiled once (streams, dependencies, collective calls, messages), then run with any
// op durations and host costs: what a fit that re-times the same programs thousands of times needs.
class DagExecutor {
public:
  DagExecutor(const std::vector<traces::RankProgram>& programs, const std::vector<traces::CommGroup>& groups);
  ~DagExecutor();
  DagExecutor(DagExecutor&&) noexcept;
  DagExecutor& operator=(DagExecutor&&) noexcept;

  // The iteration time when op i of program p takes duration_s[p][i] (receives: ignored) and `hosts` (one per
  // program, or empty) issue them. With `report`, also the stage times and (options.record_timeline) the
  // timeline; `programs` must then be the programs this executor was built from. Throws std::logic_error
  // naming a stuck op if the programs cannot finish.
  double run(const std::vector<std::vector<double>>& duration_s, const std::vector<HostProgram>& hosts,
             IterationResult* report = nullptr, const std::vector<traces::RankProgram>* programs = nullptr,
             const IterationOptions& options = {}) const;

private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

// Runs `programs` (`groups` their communicators; rank r of a group is a program's `rank`) once: compute ops
// take `compute_s`, communication ops `comm_s`, and `hosts` (one per program, or empty) issue them.
// Throws std::logic_error naming a stuck op if the programs cannot finish (a deadlock).
IterationResult execute_dag(std::vector<traces::RankProgram> programs, const std::vector<traces::CommGroup>& groups,
                            const ComputeDuration& compute_s, const CommDuration& comm_s,
                            const std::vector<HostProgram>& hosts = {}, const IterationOptions& options = {});

// The usual case: communication timed from `comm`'s flows on `graph` (contention_free_duration_s, cached).
IterationResult execute_dag(const topo::ClusterGraph& graph, std::vector<traces::RankProgram> programs,
                            const std::vector<traces::CommGroup>& groups, CommSource& comm,
                            const ComputeDuration& compute_s, const std::vector<HostProgram>& hosts = {},
                            const IterationOptions& options = {});

} // namespace gputwin::sim
