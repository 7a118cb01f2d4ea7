#pragma once
// A table of measured training iterations (CSV): one row per run, its model and plan, and the measured
// iteration time. What `gputwin calibrate --iterations` fits to and `gputwin compare --iterations` checks.
//
// Columns (header row; names are case-insensitive, a leading '#' and a UTF-8 byte-order mark are ignored):
//   time      iteration_time_s | iteration_time_ms | "iteration time (ms)"              (exactly one, required)
//   model     model, hidden | "hidden size", heads | "attention heads", layers | "# layers",
//             seq_len | "sequence length", vocab
//   plan      tp | "tensor parallelism", pp | "pipeline parallelism", dp | "data parallelism",
//             micro_batch | "micro batch", global_batch | "global batch", sp (true|false), recompute,
//             attention, schedule, chunks, zero
//   check     gpus | "# GPUs"  (must equal tp x pp x dp)
// vTrain's ground_truth_single.csv is accepted as it is. A column the file lacks takes the value of the
// command line's flag of the same name (e.g. --recompute full --vocab 50257). Other columns are errors.

#include <map>
#include <string>
#include <vector>

namespace gputwin {

struct MeasuredIteration {
  int line = 0;                            // 1-based line of the row in its file
  std::map<std::string, std::string> flags; // plan/model flag ("--hidden") -> the row's value ("1024")
  double iteration_time_s = 0;
  int64_t gpus = 0; // 0 when the file has no GPU count column
};

struct IterationTable {
  std::string path;
  std::vector<std::string> columns; // as the header names them
  std::vector<MeasuredIteration> rows;
};

// Reads and validates `path`. Throws InputError "FILE:LINE:COLUMN: ..." for an unreadable or empty file,
// an unknown or duplicated column, a missing time column, a row with the wrong number of fields, an empty field
// or a non-number where a number is expected.
IterationTable read_iteration_table(const std::string& path);

} // namespace gputwin
