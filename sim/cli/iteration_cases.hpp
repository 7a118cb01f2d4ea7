#pragma once
// The flags of a measured-iteration table (calibrate/compare --iterations) and the table read under the resource
// guards; its rows become cases in sim/calibration/iteration_cases.hpp.

#include "gputwin/common/arg_parser.hpp"
#include "gputwin/models/iteration_table.hpp"
#include "gputwin/sim/iteration_fit.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <string>
#include <vector>

namespace gputwin::cli {

// Declares --iterations, the model/plan flags, the overlap switches, --framework, --gpu-model and the cluster
// flags on `parser`.
void add_iteration_table_flags(ArgParser& parser);

// The table at `path`, its cluster (sim::iteration_cluster) and its cases (sim::iteration_cases), under the resource
// guards of calibrate/compare --iterations (--max-work, --max-memory; `what` names the run). First, before the file
// is read whole, from rows sampled at byte offsets spread over it and the row count its size implies
// (sim::sample_iteration_cases, estimate_iteration_table): a table estimated at more than twice the memory limit is
// refused, so the refusal costs the sample's time whatever the file's size. Then, rows read, on the whole table
// (iteration_cases_work, estimate_iteration_cases).
struct CheckedIterationTable {
  IterationTable table;
  topo::ClusterSpec cluster;
  std::vector<sim::IterationCase> cases;
};
CheckedIterationTable read_checked_iteration_table(const std::string& path, const ParsedArgs& flags,
                                                   const std::string& what);

} // namespace gputwin::cli
