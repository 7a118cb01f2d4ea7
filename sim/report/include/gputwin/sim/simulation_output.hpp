#pragma once
// What `gputwin simulate` reports: the iteration's figures (iteration_report.hpp) with the busiest GPU's memory, the
// stragglers as given and the ranks they slow, as a JSON object (with the model, plan and cluster it ran, so a report
// stands on its own) or as a text table.

#include "gputwin/models/framework_profile.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"
#include "gputwin/models/stragglers.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/iteration_report.hpp"
#include "gputwin/sim/link_report.hpp"
#include "gputwin/topologies/cluster_graph.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <cstdint>
#include <ostream>

namespace gputwin::sim {

// What simulate prints beside the iteration's report (iteration_report.hpp).
struct SimulationReport {
  IterationReport run;
  int64_t peak_memory_bytes = 0, peak_memory_stage = 0;
  double sim_wall_time_s = 0;
  Stragglers stragglers;  // --slow-gpu / --slow-node as given
  RankSpeeds rank_speeds; // what they make of each rank's speed
};

// What the resource guard estimated before the run (the report's "resource_estimate" member).
struct RunSizeEstimate {
  double ops = 0;          // ops the executor runs over all stage programs
  double flows = 0;        // network flows, summed over the communication ops
  double gpu_pairs = 0;    // distinct ordered GPU pairs that carry a flow
  double memory_bytes = 0; // estimated peak resident memory of the whole run
};

// The link report's members in the JSON report (--link-report without FILE).
struct LinkReportJson {
  const topo::ClusterGraph* graph = nullptr;
  const LinkReport* report = nullptr;
};

// The JSON report: what ran, the figures, the guard's estimate, the MoE figures (with `logged`'s busiest link kind when
// the flows were logged) and the link report's members when `links` has one.
void write_simulation_json(std::ostream& out, const GptConfig& model, const ParallelPlan& plan,
                           const topo::ClusterSpec& cluster, const FrameworkProfile& framework,
                           const WorkloadOptions& options, const RunSizeEstimate& estimate, const SimulationReport& r,
                           const LinkReportJson& links, const LinkReport* logged);

// The text report: model, plan, cluster (and the slow ranks), then one row per figure.
void print_simulation_table(std::ostream& out, const GptConfig& model, const ParallelPlan& plan,
                            const topo::ClusterSpec& cluster, const SimulationReport& r, const LinkReport* logged);

} // namespace gputwin::sim
