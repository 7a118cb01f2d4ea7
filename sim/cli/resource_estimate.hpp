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
#include "gputwin/sim/iteration_fit.hpp"
#include "gputwin/sim/plan_search.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <cstdint>
#include <string>
#include <vector>

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

// Work guards: the memory bound above leaves runs that fit in memory but would take minutes or hours (a pipeline of
// a hundred million micro-batches, a search over plans that each hold one). Before anything is generated, the
// items a command would build are counted from closed forms of the plan -- the memory model's pipeline schedules,
// the workload's ops, the pipeline messages' flows -- and the command refuses with that count when it exceeds
// --max-work (default_max_work). None of these counts allocates anything in proportion to what it counts.

// The default of --max-work: a minute or more of this simulator's work (a schedule step takes ~50 ns, an op or a
// flow of an iteration more); the largest runs of scripts/bench.sh count below 4e8.
constexpr double default_max_work = 1e9;

// `--max-work N`, declared on `parser`.
void add_max_work_flag(ArgParser& parser);

// The limit --max-work gives (a positive number, 1e9 accepted), else default_max_work.
double max_work(const ParsedArgs& args);

struct WorkEstimate {
  double plans = 0;          // plans counted (one for a run; the shapes of a search; the rows of a table)
  double schedule_steps = 0; // steps of the pipeline schedules the memory model walks: 2 m v per stage
  double ops = 0;            // ops of the stage programs (probed), or at least 2 m L (forward, backward per layer)
  double flows = 0;          // pipeline messages' flows: 2 m (pp v - 1) boundaries, one flow per GPU of a stage
  bool ops_exact = false;    // ops from probes of the workload generator rather than the lower bound
  double micro_batches = 0;  // the largest micro-batches per pipeline among the plans
  double total() const { return schedule_steps + ops + flows; }
  WorkEstimate& operator+=(const WorkEstimate& other);
};

// The work of one plan of `model`: the memory model's schedules only (`workload` false: `gputwin memory`), or
// also the workload's ops and pipeline flows. With `probe_ops` the ops are counted by generating probes of 1-2
// micro-batches x 1-2 layers per chunk (no communication expanded; milliseconds), else bounded below in closed form.
// REQUIRES: validate_plan(model, plan) passed.
WorkEstimate estimate_plan_work(const GptConfig& model, const ParallelPlan& plan, bool workload, bool probe_ops,
                                const WorkloadOptions& options = {});

// The work of a plan search (search, sweep, goodput --search) over `gpus` GPUs: every (tp, cp, pp, dp,
// micro-batch, schedule) shape that enumerate_plans may look at, its memory model run for up to three recompute
// modes, its workload estimated with and without overlaps (the micro-batches the steady state executes, each
// distinct pipeline message once), and the `top` plans simulated with every pipeline message's flows (the most any
// shape needs). An upper bound on the shapes, a lower bound per shape.
WorkEstimate estimate_search_work(const GptConfig& model, int64_t gpus, int64_t global_batch, int64_t max_tp,
                                  const sim::SearchSpace& space, int64_t top);

// The work of compiling the cases of a measured-iteration table (calibrate/compare --iterations): every row's
// plan generated and run once, counted in closed form (rows x plan size).
WorkEstimate iteration_cases_work(const std::vector<sim::IterationCase>& cases);

// The memory of compiling the cases of a measured-iteration table (calibrate/compare --iterations hold every row's
// compiled op graph for the whole fit) on a cluster of `gpus` GPUs. Each row's ops are bounded below in closed form
// (2 m L); the ratio of exact ops (probes of the workload generator, as for one plan) to that bound is measured on
// at most `sampled_rows` rows spread over the table and applied to the rest, so the estimate takes milliseconds
// for any row count.
ResourceEstimate estimate_iteration_cases(int64_t gpus, const std::vector<sim::IterationCase>& cases,
                                         size_t sampled_rows = 64);

// The same from a sample alone, before the table's rows are read: `rows` rows at the mean exact op count of
// `sampled` (cases of rows spread over the table). Milliseconds whatever the row count.
ResourceEstimate estimate_iteration_table(int64_t gpus, const std::vector<sim::IterationCase>& sampled, size_t rows);

// Throws InputError when `work.total()` exceeds `limit` (> 0): one line with the counts, what drives them, the
// limit, and the flag that overrides it. `what` names the run ("the simulation", "the search").
void check_work(const WorkEstimate& work, double limit, const std::string& what);

} // namespace gputwin::cli
