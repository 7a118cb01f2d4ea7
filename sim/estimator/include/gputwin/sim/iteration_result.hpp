#pragma once
// What one executed iteration reports, whichever executor ran it: the SimGrid flow-level executor
// (program_executor.hpp) or the DAG executor (dag_executor.hpp). Plain C++.

#include "gputwin/models/framework_profile.hpp"
#include "gputwin/sim/flow_log.hpp"
#include "gputwin/sim/link_usage.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace gputwin {
struct GpuComputeModel;
}

namespace gputwin::sim {

struct IterationOptions {
  bool zero_communication = false; // communication takes no time (bubble checks on a communication-free cluster)
  bool record_timeline = false;
  // Compute-communication interference (sim/interference.hpp): compute ops timed by this model (duration_ns < 0)
  // slow down while communication is in flight on their GPU, by its comm_interference parameters. Null: none.
  const GpuComputeModel* interference = nullptr;
  // On a host whose cores the ranks share (ClusterSpec::host_cores): the identical ranks each program stands for,
  // each a thread of its own (a folded workload: tp x dp; a trace replayed unfolded: 1).
  int ranks_per_program = 1;
  // Called now and then by the SimGrid executor with the ops executed so far and the total (a progress bar).
  std::function<void(int64_t done_ops, int64_t total_ops)> progress;
  // When set, the SimGrid executor records every flow it puts on the network here (link_report.hpp), and each
  // stage's exposed communication as spans (StageTimes::exposed_spans).
  FlowLog* flow_log = nullptr;
  // With flow_log null: the SimGrid executor logs the flows itself, only to fill IterationResult::link_usage (no
  // exposed spans); unlike flow_log this leaves the steady-state shortcut on (steady_link_usage.hpp). Executors
  // without flows (the estimate) leave link_usage empty.
  bool link_usage = false;
  // Execute a pipeline's repeating period once and add the rest as whole periods (steady_state.hpp), where the
  // schedule has one and nothing above needs every op; false: every micro-batch executed.
  bool steady_state = true;
  // Also keep each stage's figures per micro-batch (StageTimes::by_micro_batch): a steady-state sample, whose
  // repeating micro-batches give the growth of one period.
  bool record_micro_batch_shares = false;
};

struct OpSlice {
  int32_t program = 0; // index into IterationResult::programs
  int64_t op = 0;      // index into that program's ops
  double start_s = 0, end_s = 0;
};

// An interval in which a stage's compute stream was held by communication: inside communication op `op` on the
// compute stream, or waiting for collective `op` (an op id of the stage's program).
struct ExposedSpan {
  double start_s = 0, end_s = 0;
  int64_t op = 0;
};

// What the ops of one micro-batch add to their stage's figures (StageTimes below): compute and exposed
// communication as StageAccounting counts them, and how many ops, flows and pipeline-window ops they are.
struct MicroBatchShare {
  double compute_s = 0, exposed_comm_s = 0, pipeline_compute_s = 0, pipeline_comm_s = 0, moe_exchange_s = 0;
  int64_t ops = 0, flows = 0, pipeline_ops = 0;
};

struct StageTimes {
  double compute_s = 0;          // kernels on the compute stream
  double exposed_comm_s = 0;     // compute stream blocked in, or waiting for, collectives
  double pipeline_start_s = 0;   // first forward op began
  double pipeline_end_s = 0;     // last backward op ended
  double pipeline_compute_s = 0; // compute inside that window
  double pipeline_comm_s = 0;    // exposed communication inside that window
  double moe_exchange_s = 0;     // the part of exposed_comm_s spent in MoE token exchanges (ops named moe.*)
  std::vector<ExposedSpan> exposed_spans; // what exposed_comm_s adds up, when the accounting records spans
  std::vector<MicroBatchShare> by_micro_batch; // indexed by micro-batch, when the accounting records shares
};

struct IterationResult {
  double iteration_time_s = 0;
  std::vector<StageTimes> stages; // per program
  int64_t executed_ops = 0;
  int64_t simulated_flows = 0;
  size_t platform_links = 0;
  // Micro-batches whose time was added as whole steady-state periods instead of executed (steady_state.hpp); the
  // figures above count them. `programs` are then the last sample's (the SimGrid executor's: ranks without ops).
  int64_t extrapolated_micro_batches = 0;
  std::vector<traces::RankProgram> programs;
  std::vector<OpSlice> timeline; // when record_timeline
  std::optional<LinkUsage> link_usage; // when IterationOptions::link_usage (the SimGrid executor)
};

// Seconds compute op `op` of program `program` takes.
using ComputeDuration = std::function<double(size_t program, const traces::Op& op)>;

} // namespace gputwin::sim
