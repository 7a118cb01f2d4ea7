#pragma once
// An nccl-tests log (`all_reduce_perf` and friends): the operation, the ranks and the out-of-place time per
// size. Reads plain output and output whose lines carry mpirun's `[r,c]<stdout>:` prefix. Plain C++.

#include "gputwin/traces/collective_op.hpp"

#include <istream>
#include <string>
#include <vector>

namespace gputwin::sim {

struct NcclTestsRow {
  double bytes = 0;
  double time_s = 0; // out-of-place time
  int line = 0;      // line of the log it came from
};

struct NcclTestsLog {
  std::string path;
  CollectiveOp op = CollectiveOp::AllReduce; // from the binary name in the header, else all-reduce
  int ranks = 0;                             // `#  Rank N ...` device lines
  int gpus_per_thread = 1;                   // header `nGpus G`
  std::vector<NcclTestsRow> rows;
};

// Parses `text` read from `path`. Throws InputError "PATH:LINE: ..." for a data row with a non-number, and
// "PATH: ..." for a log without data rows or without `Rank` lines.
NcclTestsLog parse_nccl_tests_log(std::istream& text, const std::string& path);

// Reads and parses the file at `path`; an unreadable file is an InputError naming it.
NcclTestsLog read_nccl_tests_log(const std::string& path);

} // namespace gputwin::sim
