#pragma once
// `gputwin sweep --merge A.csv B.csv ...`: the CSVs of a sweep's shards (sweep_csv.hpp) joined into the file one
// unsharded run writes. The rows are ordered by their `point` column (the point's index in the whole sweep) and the
// one column that depends on other points, the scaling efficiency (a shard leaves it empty), is recomputed from the
// rows' tokens/s, which the CSV holds exactly (%.17g round-trips): the merged file is byte for byte the whole run's.

#include "gputwin/sim/sweep_csv.hpp"
#include "gputwin/sim/sweep_shard.hpp"

#include <string>
#include <vector>

namespace gputwin::sim {

// A whole sweep read back from its shards' CSVs.
struct MergedSweep {
  SweepIdentity identity;     // the sweep's, as shard 1/1
  std::vector<SweepRow> rows; // in point order, the scaling efficiency recomputed over all of them
};

// Reads the sweep CSVs `files` (every shard of one sweep, once each: check_one_sweep) and joins them. Throws
// InputError "--merge: ..." naming FILE or FILE:LINE for a file that cannot be read, is not a sweep CSV of this
// gputwin, is a shard of another sweep or slicing, repeats a shard or a point of another file (the shards of one
// sweep are disjoint), or mixes rows with and without time to train and cost; and when the files hold no rows.
// REQUIRES: `files` is not empty.
MergedSweep merge_sweep_csvs(const std::vector<std::string>& files);

} // namespace gputwin::sim
