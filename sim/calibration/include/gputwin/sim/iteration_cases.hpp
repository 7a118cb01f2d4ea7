#pragma once
// The rows of a measured-iteration table (models/iteration_table.hpp) as cases of the iteration fit: each row's
// columns on top of the command line's model and plan flags, read and validated by the shared flag readers, so
// that a row is exactly what `gputwin simulate` would run with those flags.

#include "gputwin/common/arg_parser.hpp"
#include "gputwin/models/iteration_table.hpp"
#include "gputwin/sim/iteration_fit.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gputwin::sim {

// The front end's readers of what a row does not hold itself: the model of a row's flags (gputwin reads --model
// FILE with its model-file loader) and the overlaps of the command line's switches for a row's plan.
struct IterationRowReaders {
  std::function<GptConfig(const cli::ParsedArgs& row_flags)> model;
  std::function<WorkloadOptions(const cli::ParsedArgs& command_flags, const ParallelPlan& plan)> overlaps;
};

// Every row of `table` as a case, with the overlaps of `flags`. Rows stating the same flags, GPUs and
// micro-batches are read once. Throws InputError "FILE:LINE: ..." for a row whose plan is invalid, does not match
// its GPU count or its grad_accum, or does not fit on `cluster`.
std::vector<IterationCase> iteration_cases(const IterationTable& table, const cli::ParsedArgs& flags,
                                           const topo::ClusterSpec& cluster, const IterationRowReaders& readers);

// The cluster of the flags, sized to the largest row (one node unless a row needs more; --nodes fixes it).
topo::ClusterSpec iteration_cluster(const IterationTable& table, const cli::ParsedArgs& flags);

// Rows sampled at byte offsets spread over a table, read as cases, and the row count the file's size implies:
// what a resource guard estimates a table from before it is read whole.
struct SampledIterationCases {
  std::vector<IterationCase> cases;
  int64_t estimated_rows = 0;
  int64_t cluster_gpus = 0; // of the cluster sized to the sampled rows
};

// `sampled_rows` rows of the table at `path` as cases (sample_iteration_table, iteration_cases); nullopt when the
// file holds no more rows than that, or when the sample cannot be read (the whole reading names the bad row).
std::optional<SampledIterationCases> sample_iteration_cases(const std::string& path, const cli::ParsedArgs& flags,
                                                            const IterationRowReaders& readers, int sampled_rows);

} // namespace gputwin::sim
