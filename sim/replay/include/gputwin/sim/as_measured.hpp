#pragma once
// What a captured trace's compute ops take when replayed as measured. Each compute op keeps its measured
// duration plus the host's issue gap before it: how long after it could start (its rank's previous op and its
// dependencies done) the trace shows it starting -- the engine's own loop between ops, which runs on the rank's
// thread too. On a shared host (the trace's ranks were threads on C CPU cores, ClusterSpec::host_cores) that wall
// time is not the op's work: while k > C threads were runnable, each had a core only C / k of the time. The work
// of an op is then its gap and duration weighted by min(1, C / k(t)), k(t) counting the ranks inside a compute op
// or the gap before one at time t (a rank inside a collective or message waits on a condition variable and
// holds no core). Replayed on a host with C cores shared the same way, an op that meets the same k(t) takes its
// measured time again. Plain C++.

#include "gputwin/traces/op_graph.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace gputwin::sim {

// The cores the machine a trace was captured on had (metadata `host_cores`, gputwin-engine), if it says.
// Throws traces::TraceError when the entry is there but not a positive integer.
std::optional<int> trace_host_cores(const traces::OpGraph& trace);

// The measured iteration the trace recorded (metadata `traced_iteration`, else the median), in seconds; 0 when
// the trace records none.
double measured_iteration_s(const traces::OpGraph& trace);

class AsMeasuredDurations {
public:
  // `host_cores` > 0: the trace's ranks were threads sharing that many cores (above); 0: each its own device.
  // On a shared host a communication op is done, for the gaps of the ops after it, once its last member arrived
  // and its bytes were copied at `copy_bytes_per_s` (0: no copy time): the rest of its measured time the woken
  // rank was runnable but waiting for a core, so it counts as gap before the rank's next compute op, weighted by
  // the share of a core like any gap. The replay models the copy itself.
  // REQUIRES: traces::validate_op_graph(trace) passed.
  AsMeasuredDurations(const traces::OpGraph& trace, int host_cores, double copy_bytes_per_s = 0);

  // The host's issue gap before compute op `op_id` of program `program` (index into trace.ranks), in ns; 0 for
  // an op without one (the rank's first op, communication ops, ops without measured times).
  int64_t issue_gap_ns(size_t program, int64_t op_id) const;

  // Seconds compute op `op` of program `program` takes alone: measured duration / compute_scale plus its issue
  // gap, each weighted by its share of a core on a shared host. REQUIRES: op.duration_ns >= 0, compute_scale > 0.
  double seconds(size_t program, const traces::Op& op, double compute_scale = 1) const;

private:
  struct Timed {
    int64_t gap_ns = 0;
    double gap_share = 1, op_share = 1; // mean share of a core over the gap, over the op
  };
  std::vector<std::unordered_map<int64_t, Timed>> ops_; // per program, by op id
};

} // namespace gputwin::sim
