#pragma once
// `gputwin goodput`'s report: a simulated (or searched) run and its calendar time under failures and checkpoint/
// restart -- the checkpoint size from the memory model, its write time, Daly's interval, expected failures, lost work,
// goodput and GPU-hours (models/goodput.hpp; sim/GOODPUT.md) -- as JSON or a table.

#include "gputwin/models/goodput.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/parallel_plan.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/iteration_report.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <cstdint>
#include <ostream>
#include <string>

namespace gputwin::sim {

// The run whose time to train is asked: its plan, overlaps, cluster and simulated iteration.
struct GoodputRun {
  GptConfig model;
  ParallelPlan plan;
  WorkloadOptions options; // the overlaps the plan runs with (the search's choice, or the overlap flags)
  topo::ClusterSpec cluster;
  std::string plan_source; // "flags", "flags (estimate)" or "search"
  IterationReport report;
  int64_t peak_memory_bytes = 0;
};

// The failure and checkpoint inputs (goodput's flags).
struct FailureInputs {
  double tokens = 0;                // tokens to train on
  double mtbf_gpu_hours = 0;        // one GPU's mean time between failures
  double checkpoint_write_gbps = 0; // the job's aggregate checkpoint write bandwidth, 10^9 B/s
  double restart_s = 0;             // from a failure to training again
};

// Everything the goodput report prints.
struct GoodputReport {
  GoodputRun run;
  double tokens = 0, mtbf_gpu_hours = 0, write_gbps = 0, restart_s = 0;
  GoodputInputs in;
  CheckpointSize checkpoint;
  GoodputResult g;
  int64_t gpus = 0, batch = 0;
  double gpu_hours = 0, failure_free_gpu_hours = 0;
  bool search = false;
};

// The report of `run` under `failures` (`searched`: the plan is the search's). Throws InputError for a run of more
// than 10^15 iterations, or a checkpoint time or job MTBF that is not positive and finite.
GoodputReport goodput_report(const GoodputRun& run, const FailureInputs& failures, bool searched);

void write_goodput_json(std::ostream& out, const GoodputReport& report);
void print_goodput_table(std::ostream& out, const GoodputReport& report);

} // namespace gputwin::sim
