#pragma once
// The CSV file of `gputwin sweep --csv` and its reading back by `--merge` (sweep_merge.hpp): line 1 the sweep's
// identity (sweep_shard.hpp: `# gputwin sweep HASH shard K/N of P points: FLAGS`), line 2 the header, then one row per
// point, text cells quoted as RFC 4180 when they hold a comma, a quote or a line break (a model file's `name:`).
// Numbers the merge recomputes from are written exactly (%.17g round-trips), so that a sweep's CSV read and written
// again is the same bytes. In gputwin_sweep_csv, a library of its own, so that the fuzz harness
// (tests/fuzz/sweep_csv_fuzz.cpp) links it without the simulator.

#include "gputwin/sim/sweep_shard.hpp"

#include "gputwin/models/parallel_plan.hpp"
#include "gputwin/models/workload.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace gputwin::sim {

// One point of the sweep with its best plan. A row read back from a CSV (--merge) has the plan's CSV columns only
// (tp, pp, dp, micro-batch, schedule, chunks, recompute, attention, cp, fp8, the overlaps, ep, etp, sp, zero).
struct SweepRow {
  size_t point = 0; // index in the whole sweep (model, then cluster, then GPU count), skipped points included
  std::string model, cluster;
  int64_t gpus = 0;
  ParallelPlan plan;
  WorkloadOptions options; // the Megatron-Core overlaps the best plan runs with
  int64_t peak_memory_bytes = 0;
  double iteration_time_s = NAN, tokens_per_s = NAN, mfu = NAN; // mfu: of the GEMMs' precision peak
  double time_to_train_s = NAN, gpu_hours = NAN, cost = NAN; // NaN without --tokens / --price-per-gpu-hour
  double scaling_efficiency = NAN;                           // NaN in a shard: it depends on other points
};

// A point as messages name it: "gpt-22b on 16 GPUs of dgx-a100".
std::string sweep_point_name(const std::string& model, int64_t gpus, const std::string& cluster);

// Sets every row's scaling efficiency: its tokens/s per GPU over that of the smallest point (fewest GPUs) of the same
// model and cluster among `rows`. A whole sweep, and a merge of its shards, call it on all their rows.
void compute_scaling_efficiency(std::vector<SweepRow>& rows);

// The `fp8` column of a sweep or search CSV: 0 (bf16), 1 (FP8, delayed scaling) or the block-scaled format's name
// (mxfp8, nvfp4).
std::string precision_csv_cell(const ParallelPlan& plan);

// Line 2 of every sweep CSV.
extern const char* const sweep_csv_header;

// A number for CSV (and the table): `format` of `v`, or empty when not known (no --tokens, no
// --price-per-gpu-hour, a shard's scaling efficiency).
std::string csv_number(const char* format, double v);

// Writes the identity line, the header and one line per row.
void write_sweep_csv(std::ostream& out, const SweepIdentity& identity, const std::vector<SweepRow>& rows);

// Line 1 of the sweep CSV `file`, read from `in`, as its identity. Throws InputError "--merge: FILE: empty ..." or
// parse_sweep_identity's "--merge: FILE:1: ...".
SweepIdentity read_sweep_csv_identity(std::istream& in, const std::string& file);

// Reads the sweep CSV `file` from `in`: its identity (line 1), the header (line 2), then each row, handed to `row`
// with its `FILE:LINE` (the line it starts on) as soon as it is read, in file order, so that the caller's checks
// across rows come in file order. A record ending in CR LF reads as one ending in LF, blank lines are skipped, and a
// quoted cell holding a line break goes on over the next lines (a CR before one of its line breaks is the cell's).
// `first_file`: in a merge, the file read first, whose header this one must repeat (named in the message); empty for
// that first file. Throws InputError "--merge: FILE:LINE: ..." naming the column and what was expected, for a file that
// is not a sweep CSV of this gputwin.
SweepIdentity read_sweep_csv(std::istream& in, const std::string& file, const std::string& first_file,
                             const std::function<void(const SweepRow& row, const std::string& where)>& row);

} // namespace gputwin::sim
