#pragma once
// What one rank of a multi-process run hands to rank 0 when it is done (through a rendezvous file): its share
// of each step's loss, its iteration times, its memory peaks and its trace program, as bytes.

#include "gputwin/engine/train/trainer.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <string>
#include <vector>

namespace gputwin::engine {

struct RankReport {
  int rank = 0;
  std::vector<double> weighted_loss;     // per step: this rank's share of the mean loss (0 if it reports none)
  std::vector<double> iteration_seconds; // per step, as this rank measured it
  RankMemory memory;
  int64_t started_ns = 0;      // the trace clock when the first iteration started (after the first barrier)
  traces::RankProgram program; // the traced iteration (empty without --trace)
};

std::vector<char> encode_rank_report(const RankReport& report);
// Throws CommError naming `source` when the bytes are not a whole report.
RankReport decode_rank_report(const std::vector<char>& bytes, const std::string& source);

} // namespace gputwin::engine
