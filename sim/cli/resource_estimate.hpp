#pragma once
// Resource guards: before a simulation allocates anything large, estimate from the plan alone how much memory
// it will hold, and refuse -- with the estimate and the flag that overrides it -- when that exceeds the machine
// (--max-memory, default: this machine's physical memory). An oversized run then ends in a second with a
// one-line error instead of `std::bad_alloc` after half a minute.
//
// What a flow-level run holds (fitted to peak RSS of real runs, resource_estimate.cpp):
//   - per GPU of the cluster: a SimGrid host, its netpoint and CPU model;
//   - per op of the folded stage programs (the executor keeps every program, its accounting and done flags);
//   - per distinct GPU pair a flow uses: its route (a transfer host of SimGrid's star zone and its links);
//   - the flows of the largest single communication op, which are in flight together.
// Op, flow and route counts come from the real workload generator and communication expansion run on small
// probes of the plan (1-2 micro-batches per pipeline, 1-2 layers per model chunk) and extrapolated: they are
// linear in the micro-batches and in the layers per chunk, so the probes give them exactly.

#include "gputwin/common/arg_parser.hpp"
#include "gputwin/common/byte_text.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <cstdint>
#include <string>

namespace gputwin::cli {

struct ResourceEstimate {
  int64_t gpus = 0;            // SimGrid hosts: every GPU of the cluster
  double ops = 0;              // ops the executor runs over all stage programs
  double flows = 0;            // network flows, summed over the communication ops
  double largest_op_flows = 0; // flows of the largest communication op
  double routes = 0;           // distinct ordered GPU pairs that carry a flow
  double bytes = 0;            // estimated peak resident memory of the whole run
  bool counted = true;         // false: the cluster's platform alone was over the limit, ops and flows were not counted
};

// `--max-memory SIZE`, declared on `parser`.
void add_max_memory_flag(ArgParser& parser);

// The limit --max-memory gives (K/M/G/T binary multiples), else this machine's physical memory
// (host_physical_memory_bytes); 0 when neither is known (no guard).
int64_t max_memory_bytes(const ParsedArgs& args);

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

// Throws InputError when `estimate` exceeds `limit_bytes` (> 0): one line with the estimate, what drives it,
// the limit, and the flag that overrides it. `what` names the run ("the simulation").
void check_resources(const ResourceEstimate& estimate, int64_t limit_bytes, const ParsedArgs& args,
                     const std::string& what);

} // namespace gputwin::cli
