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
  std::vector<std::string> rank_hosts;       // the host of each rank (`on HOST`; empty when its line names none)
  int gpus_per_thread = 1;                   // header `nGpus G`
  std::vector<NcclTestsRow> rows;
};

// Parses `text` read from `path`. Throws InputError "PATH:LINE: ..." for a data row with a non-number, a NUL byte
// (a damaged log) or Rank lines that do not number the ranks 0, 1, 2, ... in order, and "PATH: ..." for a log
// without data rows, without `Rank` lines or with one rank only (nothing to fit).
NcclTestsLog parse_nccl_tests_log(std::istream& text, const std::string& path);

// Throws InputError "PATH: ..." unless the log's ranks sit on their hosts as the fit places them on cluster
// `cluster_name`'s nodes: `gpus_per_node` consecutive ranks per host, the last host the rest (a two-host log of
// 2 ranks is not one node). A log whose Rank lines name no host is not checked.
// REQUIRES: gpus_per_node > 0.
void check_rank_placement(const NcclTestsLog& log, int gpus_per_node, const std::string& cluster_name);

// Reads and parses the file at `path`; an unreadable file is an InputError naming it.
NcclTestsLog read_nccl_tests_log(const std::string& path);

} // namespace gputwin::sim
