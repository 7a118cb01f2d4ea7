#pragma once
// Executes one training iteration -- the stage programs of a workload -- on the SimGrid platform: compute ops
// take the GPU compute model's time, communication ops run their flows (all folded copies) on the shared
// links, streams of a rank run concurrently, ordered by the ops' dependencies, collectives start when every
// simulated member has reached them, and pipeline messages are sent eagerly and received in order.

#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <cstdint>
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
  double exposed_comm_s = 0;     // compute stream blocked in, or waiting for, communication
  double pipeline_start_s = 0;   // first forward op began
  double pipeline_end_s = 0;     // last backward op ended
  double pipeline_compute_s = 0; // compute inside that window
  double pipeline_comm_s = 0;    // exposed communication inside that window
};

struct IterationResult {
  double iteration_time_s = 0;
  std::vector<StageTimes> stages;
  int64_t executed_ops = 0;
  int64_t simulated_flows = 0;
  size_t platform_links = 0;
  std::vector<traces::RankProgram> programs;
  std::vector<OpSlice> timeline; // when record_timeline
};

// Simulates one iteration of `workload` on `graph` (rank r on GPU r). One per process (SimGrid 3.32).
IterationResult simulate_iteration(const topo::ClusterGraph& graph, const Workload& workload,
                                   const GpuComputeModel& gpu, const IterationOptions& options = {});

} // namespace gputwin::sim
