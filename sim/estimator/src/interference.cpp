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

LoadTimeline::LoadTimeline(std::vector<LoadInterval> intervals)
{
  // Changes at the same instant are one change, summed in the intervals' order (interval i's start at position 2i,
  // its end at 2i + 1: a stable sort by time); when no op is in flight the load is exactly none (no rounding residue
  // of the sums), as in the SimGrid executor. Sorted as (time, position) keys, not as whole changes.
  std::vector<std::pair<double, uint32_t>> order;
  order.reserve(2 * intervals.size());
  for (size_t i = 0; i < intervals.size(); ++i) {
    const LoadInterval& in = intervals[i];
    if (!(in.end_s > in.start_s) || in.load.empty())
      continue;
    order.emplace_back(in.start_s, static_cast<uint32_t>(2 * i));
    order.emplace_back(in.end_s, static_cast<uint32_t>(2 * i + 1));
  }
  std::sort(order.begin(), order.end());
  times_.reserve(order.size());
  loads_.reserve(order.size());
  CommLoad now;
  int ops = 0;
  for (size_t k = 0; k < order.size();) {
    const double t = order[k].first;
    CommLoad at;
    int at_ops = 0;
    for (; k < order.size() && order[k].first == t; ++k) {
      const LoadInterval& in = intervals[order[k].second / 2];
      if (order[k].second % 2 == 0) {
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
  load_.resize(programs.size());
  send_of_.resize(programs.size());
  alone_s_.resize(programs.size());
  loaded_.resize(programs.size());
  retimed_.resize(programs.size());
  for (size_t p = 0; p < programs.size(); ++p) {
    const int32_t rank = programs[p].rank;
    load_[p].resize(programs[p].ops.size());
    send_of_[p].assign(programs[p].ops.size(), {-1, -1});
    alone_s_[p].assign(programs[p].ops.size(), 0);
    for (size_t i = 0; i < programs[p].ops.size(); ++i) {
      const traces::Op& op = programs[p].ops[i];
      if (retimed(op)) {
        alone_s_[p][i] = durations(op); // retimed: no measured duration
        retimed_[p].push_back(static_cast<uint32_t>(i));
      }
      if (op.kind == traces::OpKind::Collective) {
        load_[p][i] = load(comm.collective(op), op, rank);
      } else if (op.kind == traces::OpKind::Send) {
        load_[p][i] = load(comm.message(rank, op), op, rank);
      } else if (op.kind == traces::OpKind::Recv) {
        const auto send = sends.find({op.peer, rank, op.sequence});
        if (send == sends.end())
          continue;
        const auto [q, j] = send->second;
        send_of_[p][i] = send->second;
        load_[p][i] =
            load(comm.message(op.peer, programs[static_cast<size_t>(q)].ops[static_cast<size_t>(j)]), op, rank);
      }
      if (!load_[p][i].empty())
        loaded_[p].push_back(static_cast<uint32_t>(i));
    }
  }
}

int DagInterference::settle(const DagExecutor& executor, std::vector<std::vector<double>>& duration_s,
                            const std::vector<HostProgram>& hosts, const std::vector<traces::RankProgram>& programs,
                            const IterationOptions& options, IterationResult& result,
                            std::vector<std::vector<double>>& end_s) const
{
  bool changed = false;
  int passes = 0;
  std::vector<std::vector<double>> start_s, ends;
  // Each re-timed op's rate under the last load it met: passes near the fixed point meet the same loads.
  struct Memo {
    CommLoad load;
    double rate = 1;
  };
  std::vector<std::vector<Memo>> memo(programs_.size());
  for (size_t p = 0; p < programs_.size(); ++p)
    memo[p].assign(programs_[p].ops.size(), Memo{});
  while (passes < max_passes) {
    ++passes;
    executor.run(duration_s, hosts, nullptr, nullptr, options, &ends, &start_s);
    double moved_s = 0;
    for (size_t p = 0; p < programs_.size(); ++p) {
      const auto& ops = programs_[p].ops;
      std::vector<LoadInterval> intervals;
      intervals.reserve(loaded_[p].size());
      for (const uint32_t i : loaded_[p]) { // only their 4-byte indices are read: ops are large
        const double end = ends[p][i];
        double start = end - duration_s[p][i]; // a collective's data moves from its last member's arrival
        if (ops[i].kind == traces::OpKind::Recv) {
          const auto [q, j] = send_of_[p][i];
          const double sent_s = ends[static_cast<size_t>(q)][static_cast<size_t>(j)] -
                                duration_s[static_cast<size_t>(q)][static_cast<size_t>(j)];
          start = std::max(start_s[p][i], sent_s);
        }
        intervals.push_back({start, end, load_[p][i]});
      }
      const LoadTimeline timeline(std::move(intervals));
      size_t cursor = 0;
      for (const uint32_t i : retimed_[p]) {
        const traces::Op& op = ops[i];
        const auto rate_of = [&](const CommLoad& load) {
          Memo& m = memo[p][i];
          if (load.empty())
            return 1.0;
          if (load.channels != m.load.channels || load.hbm_bytes_per_s != m.load.hbm_bytes_per_s) {
            m.load = load;
            m.rate = interference_rate(gpu_, op, load, alone_s_[p][i]);
          }
          return m.rate;
        };
        const double d = timeline.empty() ? base_s_[p][i]
                                          : timeline.end_s(start_s[p][i], base_s_[p][i], cursor, rate_of) - start_s[p][i];
        moved_s = std::max(moved_s, std::abs(d - duration_s[p][i]));
        duration_s[p][i] = d;
      }
    }
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
