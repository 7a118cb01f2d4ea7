#pragma once
// A table of measured training iterations (CSV): one row per run, its model and plan, and the measured
// iteration time. What `gputwin calibrate --iterations` fits to and `gputwin compare --iterations` checks.
//
// Columns (header row; names are case-insensitive, a leading '#' and a UTF-8 byte-order mark are ignored):
//   time      iteration_time_s | step_time_s | iteration_time_ms | "iteration time (ms)" (exactly one, required)
//   model     model, hidden | "hidden size", heads | "attention heads", layers | "# layers",
//             seq_len | "sequence length", vocab
//   plan      tp | "tensor parallelism", pp | "pipeline parallelism", dp | "data parallelism", cp,
//             micro_batch | "micro batch", global_batch | "global batch", sp (true|false), recompute,
//             attention, schedule, chunks, zero, precision (bf16|fp8: --fp8), vp (virtual pipeline stages:
//             > 1 is --schedule interleaved --chunks vp; 1 leaves the schedule to the command line)
//   check     gpus | "# GPUs"  (must equal tp x cp x pp x dp; without a dp column (and no --dp) it gives dp),
//             grad_accum (must equal global_batch / (micro_batch x dp))
// vTrain's ground_truth_single.csv and NVIDIA dgxc-benchmarking's step_times.csv are accepted as they are. A
// column the file lacks takes the value of the command line's flag of the same name (e.g. --recompute full
// --vocab 50257). Other columns are errors.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gputwin {

struct MeasuredIteration {
  int line = 0;                            // 1-based line of the row in its file
  std::map<std::string, std::string> flags; // plan/model flag ("--hidden") -> the row's value ("1024")
  double iteration_time_s = 0;
  int64_t gpus = 0; // 0 when the file has no GPU count column
  int64_t grad_accum = 0; // micro-batches per pipeline as the row states them; 0 when the file has no such column
  int grad_accum_column = 0; // 1-based column of that field
};

struct IterationTable {
  std::string path;
  std::vector<std::string> columns; // as the header names them
  std::vector<MeasuredIteration> rows;
};

// Reads and validates `path`. Throws InputError "FILE:LINE:COLUMN: ..." for an unreadable or empty file,
// an unknown or duplicated column, a missing time column, a row with the wrong number of fields, an empty field,
// a non-number where a number is expected, or a precision other than bf16 and fp8.
IterationTable read_iteration_table(const std::string& path);

// Rows of `path` read without reading the file whole, for a guard that must answer before a large table is read: the
// header, then the first complete row after each of `samples` byte offsets spread evenly over the data (row `line`
// 0), and the row count the file's size implies at the sampled rows' mean length (0 without a sampled row). Throws
// read_iteration_table's errors for the header and for a sampled row (named by the byte offset it starts at).
struct IterationTableSample {
  IterationTable table;
  int64_t estimated_rows = 0;
};
IterationTableSample sample_iteration_table(const std::string& path, int samples);

} // namespace gputwin
