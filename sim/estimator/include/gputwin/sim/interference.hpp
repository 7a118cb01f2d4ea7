#pragma once
// Compute-communication interference as both executors apply it (models/comm_interference.hpp gives the rates):
// what each communication op puts on its GPU while in flight, the rate-based progress of a compute op, and, for
// the DAG executor, the durations compute ops take under a given schedule's communication. Plain C++.
//
// A communication op is in flight on its GPU while its data moves: a collective from its last member's arrival
// to its end (a member that arrives early waits without a load: the executors post calls as soon as their
// stream allows, not when the framework would), a send from its start to its end, a receive from the later of its
// own start and its send's start to its end. Its load: the channels NCCL runs it on (a collective: its
// CommWork's; a send or receive: p2p_channels) and hbm_bytes_per_comm_byte x the bytes the GPU sends and
// receives in it over its contention-free duration. --tp-comm-overlap's userbuffers transfers are collectives whose
// CommWork carries TE's CTAs instead (sim/collectives userbuffers_cost.hpp): 1 for a copy-engine ring-exchange step
// (the receiver's flag kernel; the data moves on the copy engine, its HBM traffic counted), 16 (TE's num_sm) for a
// pipelined reduce-scatter chunk.
//
// A compute op of work w (its duration alone) started at s under a load that changes at t1 < t2 < ...: left = w,
// t = s; at each change left -= (t_k - t) x rate(load before t_k), t = t_k; it ends at t + left / rate(load)
// once that is before the next change. Both executors evaluate exactly this.

#include "gputwin/models/comm_interference.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/sim/comm_source.hpp"
#include "gputwin/sim/iteration_result.hpp"
#include "gputwin/topologies/cluster_graph.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstdint>
#include <vector>

namespace gputwin::sim {

// The load communication op `op` (collective, send or receive; `work` its flows) puts on GPU `gpu_index` while in
// flight. `work`: for a receive, the matching send's.
CommLoad comm_op_load(const topo::ClusterGraph& graph, const GpuComputeModel& gpu, const CommWork& work,
                      const traces::Op& op, int32_t gpu_index);

// A compute op's progress under a piecewise-constant rate.
struct RatedProgress {
  double t = 0;    // progress is accounted up to here
  double left = 0; // seconds of work (at rate 1) still to do
  // Accounts the work done from t to `now` at `rate`; REQUIRES now >= t.
  void advance(double now, double rate)
  {
    left -= (now - t) * rate;
    if (left < 0)
      left = 0;
    t = now;
  }
  // When the op ends if `rate` holds from t on.
  double end_at(double rate) const { return t + left / rate; }
};

// One communication op in flight on a program's GPU: [start_s, end_s) with `load`.
struct LoadInterval {
  double start_s = 0, end_s = 0;
  CommLoad load;
};

// The load on one GPU over time, from its communication intervals: constant between consecutive change times.
class LoadTimeline {
public:
  LoadTimeline() = default;
  explicit LoadTimeline(const std::vector<LoadInterval>& intervals) { assign(intervals); }
  // The timeline of `intervals`, in place of this one: its memory is reused, and its change times are sorted
  // starting from the order of the last build's (a settle pass moves ops a little: that order is nearly the new one).
  void assign(const std::vector<LoadInterval>& intervals);
  // When compute op `op` (work `work_s` at rate 1) started at `start_s` ends.
  double end_s(const GpuComputeModel& gpu, const traces::Op& op, double start_s, double work_s) const
  {
    size_t cursor = 0;
    return end_s(start_s, work_s, cursor, [&](const CommLoad& load) { return interference_rate(gpu, op, load); });
  }
  // The same with the op's rate under a load given by `rate_of(load)`, and `cursor` a hint where to look for
  // start_s (ops timed in order of their starts: the previous op's; updated).
  template <class RateOf> double end_s(double start_s, double work_s, size_t& cursor, RateOf&& rate_of) const
  {
    RatedProgress progress{start_s, work_s};
    size_t k = segment_after(start_s, cursor);
    cursor = k;
    for (;;) {
      const double rate = k == 0 ? 1.0 : rate_of(loads_[k - 1]);
      const double end = progress.end_at(rate);
      if (k == times_.size() || end <= times_[k])
        return end;
      progress.advance(times_[k], rate);
      ++k;
    }
  }
  bool empty() const { return times_.empty(); }

private:
  // The first k with times_[k] > t, searched from `hint` on.
  size_t segment_after(double t, size_t hint) const;
  // order_ as the (time, position) keys of `intervals`' changes, sorted.
  void sort_changes(const std::vector<LoadInterval>& intervals);

  std::vector<double> times_;   // change times, increasing
  std::vector<CommLoad> loads_; // loads_[k]: the load from times_[k] to times_[k + 1]
  // Every change as (time, position): interval i's start at position 2i, its end at 2i + 1. The positions make
  // the keys distinct, so however they are sorted the order is the same.
  std::vector<std::pair<double, uint32_t>> order_;
};

// `options` with interference = &gpu when the model's comm_interference is enabled and the caller set none; the
// pointer must outlive the run.
IterationOptions with_interference(const IterationOptions& options, const GpuComputeModel& gpu);

class DagExecutor;

// The DAG executor's side: compute ops re-timed under the communication of a schedule, repeated until the schedule
// no longer changes -- then every compute op's duration is what rate-based progress under that schedule's loads
// gives, the solution the SimGrid executor reaches event by event.
class DagInterference {
public:
  // `base_s[p][i]`: each compute op's duration alone (what compute_s gave it).
  DagInterference(const topo::ClusterGraph& graph, const std::vector<traces::RankProgram>& programs, CommSource& comm,
                  const GpuComputeModel& gpu, std::vector<std::vector<double>> base_s);

  // Re-times the compute ops of `duration_s` (the other ops as they are) until a fixed point (at most max_passes
  // runs); `end_s` and `start_s` on entry: every op's end and start in `executor`'s run of `duration_s` (the first
  // pass's schedule, not run again). When anything changed, `result` and `end_s` are those of a final run with
  // `programs`' report. Returns the passes.
  int settle(const DagExecutor& executor, std::vector<std::vector<double>>& duration_s,
             const std::vector<HostProgram>& hosts, const std::vector<traces::RankProgram>& programs,
             const IterationOptions& options, IterationResult& result, std::vector<std::vector<double>>& end_s,
             const std::vector<std::vector<double>>& start_s) const;

  static constexpr int max_passes = 100;

private:
  const GpuComputeModel& gpu_;
  const std::vector<traces::RankProgram>& programs_;
  // A communication op with a load, with what settle reads of it: no traces::Op (large) is touched per pass.
  struct LoadedOp {
    uint32_t op = 0;
    int32_t send_program = -1; // a receive: its send's program and op; else -1
    uint32_t send_op = 0;
    CommLoad load;
  };
  // A re-timed op's rate under the last load it met: passes near the fixed point meet the same loads.
  struct RateMemo {
    CommLoad load;
    double rate = 1;
  };
  // Program p's re-timed ops timed under the loads of the schedule `start_s`/`end_s`, into duration_s[p]; `memo`
  // (one per re-timed op), `timeline` and `intervals` are kept from pass to pass. Returns the largest change of a
  // duration.
  double retime(size_t p, const std::vector<std::vector<double>>& start_s, const std::vector<std::vector<double>>& end_s,
                std::vector<std::vector<double>>& duration_s, std::vector<RateMemo>& memo, LoadTimeline& timeline,
                std::vector<LoadInterval>& intervals) const;

  std::vector<std::vector<double>> base_s_;
  std::vector<std::vector<LoadedOp>> loaded_; // per program: the ops with a load, in order
  std::vector<std::vector<uint32_t>> retimed_; // per program: the re-timed ops, in order
  std::vector<std::vector<double>> alone_s_;   // re-timed ops: compute_duration_s
  // The ops settle re-times: compute and memcpy ops without a measured duration.
  static bool retimed(const traces::Op& op)
  {
    return (op.kind == traces::OpKind::Compute || op.kind == traces::OpKind::Memcpy) && op.duration_ns < 0;
  }
};

} // namespace gputwin::sim
