#pragma once
// Memory guard: before a simulation allocates anything large, estimate from the plan alone how much memory it will
// hold, so that a command can refuse -- with the estimate and the flag that overrides it -- a run that exceeds the
// machine (--max-memory, resource_flags.hpp). An oversized run then ends in a second with a one-line error instead
// of `std::bad_alloc` after half a minute.
//
// What a flow-level run holds (fitted to peak RSS of real runs, resource_estimate.cpp):
//   - per GPU of the cluster: a SimGrid host, its netpoint and CPU model;
//   - per op of the folded stage programs (the executor keeps every program, its accounting and done flags);
//   - per distinct GPU pair a flow uses: its route (a transfer host of SimGrid's star zone and its links);
//   - the flows of the largest single communication op, which are in flight together.
// Op, flow and route counts come from the real workload generator and communication expansion run on small
// probes of the plan (1-2 micro-batches per pipeline, 1-2 layers per model chunk) and extrapolated: they are
// linear in the micro-batches and in the layers per chunk, so the probes give them exactly.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/iteration_fit.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gputwin::sim {

struct ResourceEstimate {
  int64_t gpus = 0;            // SimGrid hosts: every GPU of the cluster
  double ops = 0;              // ops the executor runs over all stage programs
  double flows = 0;            // network flows, summed over the communication ops
  double largest_op_flows = 0; // flows of the largest communication op
  double routes = 0;           // distinct ordered GPU pairs that carry a flow
  double bytes = 0;            // estimated peak resident memory of the whole run
  bool counted = true;         // false: the cluster's platform alone was over the limit, ops and flows were not counted
};

// The estimate of a simulation of `plan` on `cluster` (sized for it): `flow_level` for SimGrid (simulate), else
// the contention-free estimator (--estimate); `timeline` when every op's interval is recorded. Stops after the
// cluster's platform when that alone exceeds `limit_bytes` (> 0).
ResourceEstimate estimate_simulation(const topo::ClusterSpec& cluster, const GptConfig& model, const ParallelPlan& plan,
                                     const WorkloadOptions& options, bool flow_level, bool timeline,
                                     int64_t limit_bytes);

// The part of a flow-level run's estimate that depends on the cluster's size alone (SimGrid's platform of
// `gpus` GPUs): checked before the cluster itself is built.
ResourceEstimate estimate_platform(int64_t gpus);

// The estimate of replaying `ops` ops (a trace's programs, already in memory) on a cluster of `gpus` GPUs.
ResourceEstimate estimate_programs(int64_t gpus, double ops);

// The estimate of `gputwin collective`: `flows` flows in one stream over a cluster of `gpus` GPUs.
ResourceEstimate estimate_collective(int64_t gpus, double flows);

// The memory of compiling the cases of a measured-iteration table (calibrate/compare --iterations hold every row's
// compiled op graph for the whole fit) on a cluster of `gpus` GPUs. Each row's ops are bounded below in closed form
// (2 m L); the ratio of exact ops (probes of the workload generator, as for one plan) to that bound is measured on
// at most `sampled_rows` rows spread over the table and applied to the rest, so the estimate takes milliseconds
// for any row count.
ResourceEstimate estimate_iteration_cases(int64_t gpus, const std::vector<IterationCase>& cases,
                                          size_t sampled_rows = 64);

// The same from a sample alone, before the table's rows are read: `rows` rows at the mean exact op count of
// `sampled` (cases of rows spread over the table). Milliseconds whatever the row count.
ResourceEstimate estimate_iteration_table(int64_t gpus, const std::vector<IterationCase>& sampled, size_t rows);

// The ops of the stage programs of (model, plan) over all stages, counted on four small probes of the workload
// generator (1-2 micro-batches per pipeline x 1-2 layers per chunk; no communication expanded) and extrapolated:
// exact, in milliseconds whatever the plan's size.
double probed_op_count(const GptConfig& model, const ParallelPlan& plan, const WorkloadOptions& options);

// Throws InputError when `estimate` exceeds `limit_bytes` (> 0): one line with the estimate, what drives it,
// the limit, and the flag that overrides it. `what` names the run ("the simulation"); `limit_from_flag`: the
// limit is --max-memory's, else this machine's memory.
void check_resources(const ResourceEstimate& estimate, int64_t limit_bytes, bool limit_from_flag,
                     const std::string& what);

// A count as guards print it: "1234" below 1e5, else two significant digits ("3.7e+10").
std::string count_text(double n);

} // namespace gputwin::sim
