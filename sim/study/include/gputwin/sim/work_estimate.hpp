#pragma once
// Work guard: the memory guard (resource_estimate.hpp) leaves runs that fit in memory but would take minutes or
// hours (a pipeline of a hundred million micro-batches, a search over plans that each hold one). Before anything is
// generated, the items a command would build are counted from closed forms of the plan -- the memory model's
// pipeline schedules, the workload's ops, the pipeline messages' flows -- and the command refuses with that count
// when it exceeds --max-work (resource_flags.hpp; default_max_work). None of these counts allocates anything in
// proportion to what it counts.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/iteration_fit.hpp"
#include "gputwin/sim/plan_search.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gputwin::sim {

// The default of --max-work: a minute or more of this simulator's work (a schedule step takes ~50 ns, an op or a
// flow of an iteration more); the largest runs of scripts/bench.sh count below 4e8.
constexpr double default_max_work = 1e9;

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
                                  const SearchSpace& space, int64_t top);

// The work of compiling the cases of a measured-iteration table (calibrate/compare --iterations): every row's
// plan generated and run once, counted in closed form (rows x plan size).
WorkEstimate iteration_cases_work(const std::vector<IterationCase>& cases);

// Throws InputError when `work.total()` exceeds `limit` (> 0): one line with the counts, what drives them, the
// limit, and the flag that overrides it. `what` names the run ("the simulation", "the search").
void check_work(const WorkEstimate& work, double limit, const std::string& what);

} // namespace gputwin::sim
