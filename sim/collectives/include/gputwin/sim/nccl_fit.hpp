#pragma once
// The cluster's `nccl:` parameters fitted to nccl-tests logs: a deterministic coordinate search (multiplicative
// steps, halved when no step helps) minimising the mean absolute log error of the predicted time per call
// (nccl_tests_call_s) over every row of every log together, after dropping each log's worst 10% of rows
// (outliers such as a warm-up row). Plain C++, no SimGrid.

#include "gputwin/sim/nccl_tests_log.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <string>
#include <vector>

namespace gputwin::sim {

struct NcclLogFit {
  std::string path;
  int ranks = 0;
  int rows = 0;
  int within_15_percent = 0;
  double median_abs_error = 0; // |predicted / measured - 1|
  double max_abs_error = 0;
};

struct NcclFit {
  topo::NcclSpec nccl;
  double objective = 0; // trimmed mean |log(predicted / measured)|
  std::vector<NcclLogFit> logs;
};

// The predicted time per call of each row of `log` on `cluster` (ranks filling nodes in order): the closed form
// of a lone collective (nccl_tests_call_s) plus the longest route latency among the log's GPUs, which the flow
// runner pays before the transfers.
std::vector<double> predict_nccl_tests_log(const topo::ClusterSpec& cluster, const NcclTestsLog& log);

// Per-log errors of `cluster` against `logs`. Throws InputError for a log whose ranks sit on their hosts otherwise
// than packed onto `cluster`'s nodes (check_rank_placement).
std::vector<NcclLogFit> nccl_log_errors(const topo::ClusterSpec& cluster, const std::vector<NcclTestsLog>& logs);

// Fits `start.nccl` to `logs`; a log placed otherwise than packed onto `start`'s nodes is an InputError
// (check_rank_placement). REQUIRES: logs non-empty.
NcclFit fit_nccl(const topo::ClusterSpec& start, const std::vector<NcclTestsLog>& logs);

} // namespace gputwin::sim
