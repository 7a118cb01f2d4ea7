#pragma once
// A pipeline's steady state executed once: an iteration of m micro-batches whose schedule repeats with a period
// of `step` micro-batches is executed at one smaller count m_s (past the schedule's warm-up, a warm-up's reach and
// a period more, before its cool-down). It is taken when (1) in that run every op of every program between the
// warm-up and the cool-down starts and ends exactly one period T after its counterpart `step` micro-batches
// earlier -- the executor's state at a period boundary is the previous one shifted by T, so every further period
// repeats it too and the cool-down follows shifted -- and (2) what the ops of each repeating period add to every
// figure the executor reports (each stage's compute, exposed communication, pipeline compute and communication and
// MoE exchange; the op and flow counts) is the same from period to period. An iteration of m micro-batches is then
// that run with (m - m_s) / step such periods inserted: its figures are the run's plus as many periods' shares,
// the iteration time, the pipeline windows' ends plus as many T.
//
// Where either fails (no period yet, or none at all: stages that drift apart, as GPipe's forwards do, a fault at
// a fixed time), m_s is lengthened and tried again, and when the run would cost 3/4 of m the iteration is executed
// whole.
// So the shortcut never changes an answer beyond rounding: the tests hold it to 1e-9 relative against the whole
// iteration (tests/sim/steady_state_test.cpp) over 1F1B, interleaved, CP, overlaps, stragglers and MoE.
// Link usage (IterationOptions::link_usage) is extrapolated the same way (steady_link_usage.hpp).
// It is off for runs that record a timeline or flows (those need every op), with IterationOptions::steady_state
// false, and when the environment sets GPUTWIN_EXACT (to anything but "" or "0"), which the flow runner's flow-set
// shortcut (sim/executor/flow_runner.hpp) obeys too. Plain C++.

#include "gputwin/models/workload.hpp"
#include "gputwin/sim/iteration_result.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gputwin::sim {

// False when the environment variable GPUTWIN_EXACT is set to anything but "" or "0".
bool shortcuts_enabled();

// The run a steady state is read from: `micro_batches` of them, repeating every `step`.
struct SteadyStateSample {
  int64_t micro_batches = 0;
  int64_t step = 1; // micro-batches per period: pp for the interleaved schedule (Megatron needs m % pp == 0), else 1
  // Micro-batches at either end of an iteration that may still be in the warm-up or cool-down, and how far back an
  // op's dependencies reach: pp for 1F1B (its warm-up is at most pp - 1 forwards), for the interleaved schedule the
  // groups of pp micro-batches its 2 (pp - 1) + (chunks - 1) pp warm-up steps of one chunk each touch (2 pp but
  // for pp = 2).
  int64_t warmup = 0;
};

// The sample for `plan` (3 warm-ups, + max(8, pp / 2) for 1F1B, + 2 periods, rounded up to a multiple of the
// step), or nullopt when it would execute more than 3/4 of the micro-batches the plan has, so that the whole
// iteration is about as cheap (and a run that fails to repeat would cost more), or the schedule has no common period (GPipe: every stage runs its forwards at its own pace).
std::optional<SteadyStateSample> steady_state_sample(const ParallelPlan& plan);

// Where a run repeats: from micro-batch `first_micro_batch` on, micro-batch i + step starts and ends every op period_s
// after micro-batch i.
struct SteadyPeriod {
  double period_s = 0;
  int64_t first_micro_batch = 0;
};

// The period of `r`, a run of `sample` with its timeline: scanning back from the cool-down (i + step <
// micro_batches - warmup), the first micro-batch from which every op of every program in micro-batch i + step
// (stage_accounting.hpp's period_micro_batches: ops outside any micro-batch go with the one before them) starts and ends the same time after its counterpart in micro-batch i (same position among the micro-batch's ops,
// same name), and that time; nullopt if not even the last pair repeats. From there on the executor's state repeats:
// what follows a period boundary depends only on the times of ops a warm-up's reach before it.
std::optional<SteadyPeriod> steady_period(const IterationResult& r, const SteadyStateSample& sample);

// What the sample run tells the steady-state driver: its figures (`result` without its timeline and shares), where
// it repeats, and what one period adds to each figure.
struct SampleOutcome {
  IterationResult result;
  std::optional<SteadyPeriod> period;
  // With a period: one period's growth of every figure, in the order steady_state.cpp's `figures` lists them;
  // empty when the repeating periods do not add the same (integers: exactly).
  std::vector<double> growth;
  bool spans = false; // the run recorded exposed spans (a flow log): the iteration is then executed whole
  // With result.link_usage (IterationOptions::link_usage): what one period adds to it (steady_link_usage.hpp); a
  // sample with link usage but none of this does not repeat.
  std::optional<LinkUsage> link_growth;
};

// The outcome of `result`, the run of `sample` (with its timeline and micro-batch shares).
SampleOutcome sample_outcome(IterationResult result, const SteadyStateSample& sample);
// An outcome as text and back, exactly (hex floats), for a sample run in another process: the figures, the period,
// the growth, and each program's rank (`programs` read back hold ranks, not ops).
std::string to_text(const SampleOutcome& outcome);
SampleOutcome sample_outcome_from_text(const std::string& text);

// The options of the sample run: the caller's, recording the timeline and micro-batch shares, without progress.
IterationOptions sample_options(const IterationOptions& options);

// Runs the sample's workload (however: in this process, or in a child process) with sample_options, and returns
// its outcome.
using SampleRun = std::function<SampleOutcome(const Workload& workload, const SteadyStateSample& sample)>;
using WholeRun = std::function<IterationResult(const Workload& workload)>;

// The iteration of `workload`: from the sample where the shortcut applies (the sample's result, its figures
// extrapolated to the workload's micro-batches), else run_whole(workload).
IterationResult run_with_steady_state(const Workload& workload, const IterationOptions& options,
                                      const SampleRun& run_sample, const WholeRun& run_whole);

// `run`(workload, options) where the shortcut applies, else `run` on `workload` itself; `run` must be deterministic
// and executes one iteration of the workload it is given (a copy of `workload` with fewer micro-batches: the global
// batch shrunk, everything else the same) with the options it is given (the sample records its timeline and shares).
IterationResult run_with_steady_state(
    const Workload& workload, const IterationOptions& options,
    const std::function<IterationResult(const Workload&, const IterationOptions&)>& run);

} // namespace gputwin::sim
