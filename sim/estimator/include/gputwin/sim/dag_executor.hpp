#pragma once
// The fast executor: the same rank programs, host issue model and stage report as the SimGrid executor
// (program_executor.hpp), computed as longest paths through the op graph instead of simulated -- no SimGrid,
// no actors, about 20 ns per op. Every constraint of the flow-level executor is kept exactly (stream order,
// cross-stream dependencies, host issue times and synchronisations, collectives starting when their last
// member arrives, receives ending when their message has arrived); only the network differs: each
// communication op takes its flows' contention-free time (lone_transfer.hpp: the busiest link of its own flows, plus
// route and NCCL latency) and, in execute_dag(graph, ...), ops that overlap in that schedule and share a link are then
// slowed down once the way max-min sharing would (per link, each flow of one moves at most what the other's flows
// move while both run: a fluid view, no events), and the iteration re-timed. Flows that meet no other keep their
// time exactly, so plans whose ops never share a link (Table 5's) match the flow-level simulation to rounding;
// where DP reductions of different stages, the embedding reduction and pipeline messages meet on NICs and fabric
// links it stays within about 0.3% (tests/sim/estimator_accuracy_test.cpp). `search` ranks plans with it;
// `calibrate --iterations` fits with the contention-free times (DagExecutor with its own durations). Plain C++.

#include "gputwin/sim/comm_source.hpp"
#include "gputwin/sim/iteration_result.hpp"
#include "gputwin/sim/lone_transfer.hpp" // contention_free_duration_s, nccl_link_bytes_per_s
#include "gputwin/topologies/cluster_graph.hpp"

#include <memory>
#include <vector>

namespace gputwin::sim {

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
  // timeline; `programs` must then be the programs this executor was built from. With `end_s`, every op's end
  // (end_s[p][i]); with `start_s`, every op's start (a collective's: its own arrival); what they held is
  // overwritten, its memory reused (pass the same vectors run after run). Throws std::logic_error naming a stuck
  // op if the programs cannot finish.
  double run(const std::vector<std::vector<double>>& duration_s, const std::vector<HostProgram>& hosts,
             IterationResult* report = nullptr, const std::vector<traces::RankProgram>* programs = nullptr,
             const IterationOptions& options = {}, std::vector<std::vector<double>>* end_s = nullptr,
             std::vector<std::vector<double>>* start_s = nullptr) const;

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

// How far execute_dag(graph, ...) times the ops. ContentionFree stops after its first pass: every compute op at its
// speed alone and every transfer alone on the links. Interference and link sharing only lengthen ops (rates <= 1,
// stretched transfers no shorter), and every end in the DAG is a max of sums of durations, so that pass's
// iteration time is a lower bound on the Settled one (the plan search prunes with it).
enum class DagTiming { Settled, ContentionFree };

// The usual case: communication timed from `comm`'s flows on `graph` (contention_free_duration_s, cached),
// then stretched where ops overlapping in time share a link (once, as above; not with zero_communication). A
// collective `comm` says may run alone and whose links no other communication uses is never stretched, as the
// flow-level executor times it alone too.
IterationResult execute_dag(const topo::ClusterGraph& graph, std::vector<traces::RankProgram> programs,
                            const std::vector<traces::CommGroup>& groups, CommSource& comm,
                            const ComputeDuration& compute_s, const std::vector<HostProgram>& hosts = {},
                            const IterationOptions& options = {}, DagTiming timing = DagTiming::Settled);

} // namespace gputwin::sim
