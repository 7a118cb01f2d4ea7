#pragma once
// The rows of a measured-iteration table (models/iteration_table.hpp) as models and plans: each row's columns
// on top of the command line's model and plan flags, read and validated by the shared flag readers, so a row
// is exactly what `gputwin simulate` would run with those flags.

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

// Every row of `table` as a case, with the overlaps of the flags. Throws InputError "FILE:LINE: ..." for a row whose
// plan is invalid, does not match its GPU count or its grad_accum, or does not fit on `cluster`.
std::vector<sim::IterationCase> iteration_cases(const IterationTable& table, const ParsedArgs& flags,
                                                const topo::ClusterSpec& cluster);

// The table at `path`, its cluster (iteration_cluster) and its cases (iteration_cases), under the resource guards of
// calibrate/compare --iterations (--max-work, --max-memory; `what` names the run). First, before the file is read
// whole, from rows sampled at byte offsets spread over it and the row count its size implies
// (sample_iteration_table, estimate_iteration_table): a table estimated at more than twice the memory limit is
// refused, so the refusal costs the sample's time whatever the file's size. Then, rows read, on the whole table
// (iteration_cases_work, estimate_iteration_cases).
struct CheckedIterationTable {
  IterationTable table;
  topo::ClusterSpec cluster;
  std::vector<sim::IterationCase> cases;
};
CheckedIterationTable read_checked_iteration_table(const std::string& path, const ParsedArgs& flags,
                                                   const std::string& what);

// The cluster of the flags, sized to the largest row (one node unless a row needs more).
topo::ClusterSpec iteration_cluster(const IterationTable& table, const ParsedArgs& flags);

} // namespace gputwin::cli
