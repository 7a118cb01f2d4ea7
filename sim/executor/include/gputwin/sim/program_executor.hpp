#pragma once
// Executes rank programs (the op-graph form of traces/op_graph.hpp) on the SimGrid platform: compute ops take
// the duration the caller gives them, communication ops run their flows (from a CommSource) on the shared
// links; streams of a rank run concurrently, ordered by the ops' dependencies; collectives start when every
// simulated member has reached them; pipeline messages are sent eagerly and received in order.
// `simulate` (a generated workload) and `replay` (a captured trace) both run through here.

#include "gputwin/sim/comm_source.hpp"
#include "gputwin/topologies/cluster_graph.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstdint>
#include <functional>
#include <vector>

namespace gputwin::sim {

struct IterationOptions {
  bool zero_communication = false; // communication takes no time (bubble checks on a communication-free cluster)
  bool record_timeline = false;
};

struct OpSlice {
  int32_t program = 0; // index into IterationResult::programs
  int64_t op = 0;      // index into that program's ops
  double start_s = 0, end_s = 0;
};

struct StageTimes {
  double compute_s = 0;          // kernels on the compute stream
  double exposed_comm_s = 0;     // compute stream blocked in, or waiting for, collectives
  double pipeline_start_s = 0;   // first forward op began
  double pipeline_end_s = 0;     // last backward op ended
  double pipeline_compute_s = 0; // compute inside that window
  double pipeline_comm_s = 0;    // exposed communication inside that window
};

struct IterationResult {
  double iteration_time_s = 0;
  std::vector<StageTimes> stages; // per program
  int64_t executed_ops = 0;
  int64_t simulated_flows = 0;
  size_t platform_links = 0;
  std::vector<traces::RankProgram> programs;
  std::vector<OpSlice> timeline; // when record_timeline
};

// Seconds compute op `op` of program `program` takes.
using ComputeDuration = std::function<double(size_t program, const traces::Op& op)>;

// Runs `programs` (rank r on GPU r of `graph`; `groups` their communicators) once. The programs must be
// deadlock-free (check_progress). One per process (SimGrid 3.32).
IterationResult execute_programs(const topo::ClusterGraph& graph, std::vector<traces::RankProgram> programs,
                                 const std::vector<traces::CommGroup>& groups, CommSource& comm,
                                 const ComputeDuration& compute_s, const IterationOptions& options = {});

} // namespace gputwin::sim
