#include "gputwin/sim/interference.hpp"

#include "gputwin/models/compute_duration_memo.hpp"
#include "gputwin/sim/dag_executor.hpp"
#include "gputwin/sim/lone_transfer.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

namespace gputwin::sim {

CommLoad comm_op_load(const topo::ClusterGraph& graph, const GpuComputeModel& gpu, const CommWork& work,
                      const traces::Op& op, int32_t gpu_index)
{
  const CommInterferenceParams& params = gpu.comm_interference;
  CommLoad load;
  load.channels = op.kind == traces::OpKind::Collective ? work.channels : params.p2p_channels;
  double bytes = 0; // sent and received by this GPU
  for (const Flow& f : work.flows)
    if (f.src_gpu == gpu_index || f.dst_gpu == gpu_index)
      bytes += f.bytes;
  const double duration_s = contention_free_duration_s(graph, work);
  if (duration_s > 0)
    load.hbm_bytes_per_s = params.hbm_bytes_per_comm_byte * bytes / duration_s;
  return load;
}

IterationOptions with_interference(const IterationOptions& options, const GpuComputeModel& gpu)
{
  IterationOptions with = options;
  if (!with.interference && gpu.comm_interference.enabled)
    with.interference = &gpu;
  return with;
}

void LoadTimeline::sort_changes(const std::vector<LoadInterval>& intervals)
{
  const auto counts = [&](size_t i) { return intervals[i].end_s > intervals[i].start_s && !intervals[i].load.empty(); };
  const auto time_of = [&](uint32_t position) {
    return position % 2 == 0 ? intervals[position / 2].start_s : intervals[position / 2].end_s;
  };
  // The last build's keys that still count, with their new times, in the last build's order.
  size_t kept = 0;
  bool comparable = true; // no NaN time: the keys are totally ordered
  for (const auto& [time, position] : order_)
    if (position / 2 < intervals.size() && counts(position / 2)) {
      const double t = time_of(position);
      comparable = comparable && t == t;
      order_[kept++] = {t, position};
    }
  order_.resize(kept);
  size_t counting = 0;
  for (size_t i = 0; i < intervals.size(); ++i)
    counting += counts(i) ? 2 : 0;
  if (kept != counting || !comparable) { // some changes are new: every key afresh, in position order, then sorted
    order_.clear();
    for (size_t i = 0; i < intervals.size(); ++i)
      if (counts(i)) {
        order_.emplace_back(intervals[i].start_s, static_cast<uint32_t>(2 * i));
        order_.emplace_back(intervals[i].end_s, static_cast<uint32_t>(2 * i + 1));
      }
    std::sort(order_.begin(), order_.end());
    return;
  }
  // Nearly sorted: insertion sort, unless it has to move the keys far (then a full sort of what it has).
  const size_t budget = 8 * order_.size() + 64;
  size_t moves = 0;
  for (size_t k = 1; k < order_.size(); ++k) {
    const std::pair<double, uint32_t> key = order_[k];
    size_t j = k;
    for (; j > 0 && key < order_[j - 1]; --j)
      order_[j] = order_[j - 1];
    order_[j] = key;
    moves += k - j;
    if (moves > budget) {
      std::sort(order_.begin(), order_.end());
      return;
    }
  }
}

void LoadTimeline::assign(const std::vector<LoadInterval>& intervals)
{
  // Changes at the same instant are one change, summed in the intervals' order (interval i's start at position 2i,
  // its end at 2i + 1: a stable sort by time); when no op is in flight the load is exactly none (no rounding residue
  // of the sums), as in the SimGrid executor. Sorted as (time, position) keys, not as whole changes.
  sort_changes(intervals);
  times_.clear();
  loads_.clear();
  times_.reserve(order_.size());
  loads_.reserve(order_.size());
  CommLoad now;
  int ops = 0;
  for (size_t k = 0; k < order_.size();) {
    const double t = order_[k].first;
    CommLoad at;
    int at_ops = 0;
    for (; k < order_.size() && order_[k].first == t; ++k) {
      const LoadInterval& in = intervals[order_[k].second / 2];
      if (order_[k].second % 2 == 0) {
        at += in.load;
        ++at_ops;
      } else {
        CommLoad minus;
        minus -= in.load;
        at += minus;
        --at_ops;
      }
    }
    now += at;
    ops += at_ops;
    if (ops == 0)
      now = CommLoad{};
    times_.push_back(t);
    loads_.push_back(now);
  }
}

size_t LoadTimeline::segment_after(double t, size_t hint) const
{
  const auto begin = times_.begin();
  if (hint > times_.size() || (hint > 0 && times_[hint - 1] > t))
    return static_cast<size_t>(std::upper_bound(begin, begin + static_cast<std::ptrdiff_t>(std::min(hint, times_.size())), t) - begin);
  for (int steps = 0; steps < 8; ++steps, ++hint) // usually a change or two later than the previous op's
    if (hint == times_.size() || times_[hint] > t)
      return hint;
  return static_cast<size_t>(std::upper_bound(begin + static_cast<std::ptrdiff_t>(hint), times_.end(), t) - begin);
}

DagInterference::DagInterference(const topo::ClusterGraph& graph, const std::vector<traces::RankProgram>& programs,
                                 CommSource& comm, const GpuComputeModel& gpu, std::vector<std::vector<double>> base_s)
    : gpu_(gpu), programs_(programs), base_s_(std::move(base_s))
{
  std::map<std::tuple<int32_t, int32_t, int64_t>, std::pair<int32_t, int32_t>> sends; // (src, dst, sequence)
  for (size_t p = 0; p < programs.size(); ++p)
    for (size_t i = 0; i < programs[p].ops.size(); ++i)
      if (programs[p].ops[i].kind == traces::OpKind::Send)
        sends[{programs[p].rank, programs[p].ops[i].peer, programs[p].ops[i].sequence}] = {static_cast<int32_t>(p),
                                                                                           static_cast<int32_t>(i)};
  std::map<std::tuple<const CommWork*, int32_t, traces::OpKind>, CommLoad> cache;
  auto load = [&](const CommWork& work, const traces::Op& op, int32_t gpu_index) {
    auto it = cache.find({&work, gpu_index, op.kind});
    if (it == cache.end())
      it = cache.emplace(std::make_tuple(&work, gpu_index, op.kind), comm_op_load(graph, gpu, work, op, gpu_index))
               .first;
    return it->second;
  };
  ComputeDurationMemo durations(gpu);
  alone_s_.resize(programs.size());
  loaded_.resize(programs.size());
  retimed_.resize(programs.size());
  for (size_t p = 0; p < programs.size(); ++p) {
    const int32_t rank = programs[p].rank;
    alone_s_[p].assign(programs[p].ops.size(), 0);
    for (size_t i = 0; i < programs[p].ops.size(); ++i) {
      const traces::Op& op = programs[p].ops[i];
      if (retimed(op)) {
        alone_s_[p][i] = durations(op); // retimed: no measured duration
        retimed_[p].push_back(static_cast<uint32_t>(i));
      }
      LoadedOp loaded{static_cast<uint32_t>(i), -1, 0, CommLoad{}};
      if (op.kind == traces::OpKind::Collective) {
        loaded.load = load(comm.collective(op), op, rank);
      } else if (op.kind == traces::OpKind::Send) {
        loaded.load = load(comm.message(rank, op), op, rank);
      } else if (op.kind == traces::OpKind::Recv) {
        const auto send = sends.find({op.peer, rank, op.sequence});
        if (send == sends.end())
          continue;
        const auto [q, j] = send->second;
        loaded.send_program = q;
        loaded.send_op = static_cast<uint32_t>(j);
        loaded.load =
            load(comm.message(op.peer, programs[static_cast<size_t>(q)].ops[static_cast<size_t>(j)]), op, rank);
      }
      if (!loaded.load.empty())
        loaded_[p].push_back(loaded);
    }
  }
}

double DagInterference::retime(size_t p, const std::vector<std::vector<double>>& start_s,
                               const std::vector<std::vector<double>>& end_s,
                               std::vector<std::vector<double>>& duration_s, std::vector<RateMemo>& memo,
                               LoadTimeline& timeline, std::vector<LoadInterval>& intervals) const
{
  intervals.clear();
  for (const LoadedOp& l : loaded_[p]) {
    const double end = end_s[p][l.op];
    double start = end - duration_s[p][l.op]; // a collective's data moves from its last member's arrival
    if (l.send_program >= 0) {                // a receive
      const size_t q = static_cast<size_t>(l.send_program);
      const double sent_s = end_s[q][l.send_op] - duration_s[q][l.send_op];
      start = std::max(start_s[p][l.op], sent_s);
    }
    intervals.push_back({start, end, l.load});
  }
  timeline.assign(intervals);
  double moved_s = 0;
  size_t cursor = 0;
  for (size_t r = 0; r < retimed_[p].size(); ++r) {
    const uint32_t i = retimed_[p][r];
    const auto rate_of = [&](const CommLoad& load) {
      RateMemo& m = memo[r];
      if (load.empty())
        return 1.0;
      if (load.channels != m.load.channels || load.hbm_bytes_per_s != m.load.hbm_bytes_per_s) {
        m.load = load;
        m.rate = interference_rate(gpu_, programs_[p].ops[i], load, alone_s_[p][i]);
      }
      return m.rate;
    };
    const double d = timeline.empty() ? base_s_[p][i]
                                      : timeline.end_s(start_s[p][i], base_s_[p][i], cursor, rate_of) - start_s[p][i];
    moved_s = std::max(moved_s, std::abs(d - duration_s[p][i]));
    duration_s[p][i] = d;
  }
  return moved_s;
}

int DagInterference::settle(const DagExecutor& executor, std::vector<std::vector<double>>& duration_s,
                            const std::vector<HostProgram>& hosts, const std::vector<traces::RankProgram>& programs,
                            const IterationOptions& options, IterationResult& result,
                            std::vector<std::vector<double>>& end_s, const std::vector<std::vector<double>>& start_s) const
{
  bool changed = false;
  int passes = 0;
  std::vector<std::vector<double>> starts, ends; // the schedule of each pass after the first
  std::vector<std::vector<RateMemo>> memo(programs_.size());
  for (size_t p = 0; p < programs_.size(); ++p)
    memo[p].resize(retimed_[p].size());
  std::vector<LoadTimeline> timelines(programs_.size()); // kept from pass to pass: their sorted order is reused
  std::vector<LoadInterval> intervals;
  while (passes < max_passes) {
    ++passes;
    if (passes > 1) // the first pass's schedule is the caller's run of the same durations
      executor.run(duration_s, hosts, nullptr, nullptr, options, &ends, &starts);
    const std::vector<std::vector<double>>& pass_end_s = passes > 1 ? ends : end_s;
    const std::vector<std::vector<double>>& pass_start_s = passes > 1 ? starts : start_s;
    double moved_s = 0;
    for (size_t p = 0; p < programs_.size(); ++p)
      moved_s = std::max(moved_s, retime(p, pass_start_s, pass_end_s, duration_s, memo[p], timelines[p], intervals));
    if (moved_s <= 1e-12)
      break;
    changed = true;
  }
  if (changed) {
    result = IterationResult{};
    executor.run(duration_s, hosts, &result, &programs, options, &end_s);
  }
  return passes;
}

} // namespace gputwin::sim
