#include "gputwin/sim/interference.hpp"

#include "gputwin/sim/dag_executor.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

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
  // Changes at the same instant are one change; when no op is in flight the load is exactly none (no rounding
  // residue of the sums), as in the SimGrid executor.
  struct Change {
    CommLoad load;
    int ops = 0;
  };
  std::map<double, Change> delta;
  for (const LoadInterval& i : intervals) {
    if (!(i.end_s > i.start_s) || i.load.empty())
      continue;
    Change& begin = delta[i.start_s];
    begin.load += i.load;
    ++begin.ops;
    Change& end = delta[i.end_s];
    end.load -= i.load;
    --end.ops;
  }
  CommLoad now;
  int ops = 0;
  for (const auto& [t, d] : delta) {
    now += d.load;
    ops += d.ops;
    if (ops == 0)
      now = CommLoad{};
    times_.push_back(t);
    loads_.push_back(now);
  }
}

double LoadTimeline::end_s(const GpuComputeModel& gpu, const traces::Op& op, double start_s, double work_s) const
{
  RatedProgress progress{start_s, work_s};
  size_t k = static_cast<size_t>(std::upper_bound(times_.begin(), times_.end(), start_s) - times_.begin());
  for (;;) {
    const CommLoad load = k == 0 ? CommLoad{} : loads_[k - 1];
    const double rate = interference_rate(gpu, op, load);
    const double end = progress.end_at(rate);
    if (k == times_.size() || end <= times_[k])
      return end;
    progress.advance(times_[k], rate);
    ++k;
  }
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
  load_.resize(programs.size());
  send_of_.resize(programs.size());
  for (size_t p = 0; p < programs.size(); ++p) {
    const int32_t rank = programs[p].rank;
    load_[p].resize(programs[p].ops.size());
    send_of_[p].assign(programs[p].ops.size(), {-1, -1});
    for (size_t i = 0; i < programs[p].ops.size(); ++i) {
      const traces::Op& op = programs[p].ops[i];
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
  while (passes < max_passes) {
    ++passes;
    executor.run(duration_s, hosts, nullptr, nullptr, options, &ends, &start_s);
    double moved_s = 0;
    for (size_t p = 0; p < programs_.size(); ++p) {
      const auto& ops = programs_[p].ops;
      std::vector<LoadInterval> intervals;
      for (size_t i = 0; i < ops.size(); ++i) {
        if (load_[p][i].empty())
          continue;
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
      for (size_t i = 0; i < ops.size(); ++i) {
        const traces::Op& op = ops[i];
        if ((op.kind != traces::OpKind::Compute && op.kind != traces::OpKind::Memcpy) || op.duration_ns >= 0)
          continue;
        const double d =
            timeline.empty() ? base_s_[p][i] : timeline.end_s(gpu_, op, start_s[p][i], base_s_[p][i]) - start_s[p][i];
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
