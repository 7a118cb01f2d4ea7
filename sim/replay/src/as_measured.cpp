#include "gputwin/sim/as_measured.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <tuple>

namespace gputwin::sim {

namespace {

bool takes_a_core(const traces::Op& op)
{
  return op.kind == traces::OpKind::Compute || op.kind == traces::OpKind::Memcpy;
}

// G(t) = the integral up to t of min(1, C / k(s)), k(s) the number of `intervals` holding s: one thread's
// progress while k threads share C cores. Evaluated at the intervals' ends and at the `points` given only.
class CoreShare {
public:
  CoreShare(const std::vector<std::pair<int64_t, int64_t>>& intervals, const std::vector<int64_t>& points, int cores)
  {
    std::vector<std::pair<int64_t, int>> events;
    events.reserve(2 * intervals.size() + points.size());
    for (const auto& [begin, end] : intervals)
      if (end > begin) {
        events.emplace_back(begin, +1);
        events.emplace_back(end, -1);
      }
    for (const int64_t t : points)
      events.emplace_back(t, 0);
    std::sort(events.begin(), events.end());
    int running = 0;
    double progress = 0;
    for (size_t e = 0; e < events.size(); ++e) {
      if (e > 0 && events[e].first != events[e - 1].first) {
        const double span = static_cast<double>(events[e].first - events[e - 1].first);
        progress += running > cores ? span * cores / running : span;
      }
      if (times_.empty() || times_.back() != events[e].first) {
        times_.push_back(events[e].first);
        progress_.push_back(progress);
      }
      running += events[e].second;
    }
  }

  // The mean share of a core a thread runnable over [begin, end) had. REQUIRES: begin, end are interval ends or
  // points given to the constructor.
  double mean(int64_t begin, int64_t end) const
  {
    if (end <= begin)
      return 1;
    return (at(end) - at(begin)) / static_cast<double>(end - begin);
  }

private:
  double at(int64_t t) const
  {
    const auto it = std::lower_bound(times_.begin(), times_.end(), t);
    return progress_[static_cast<size_t>(it - times_.begin())];
  }

  std::vector<int64_t> times_;
  std::vector<double> progress_; // G at times_
};

// A communication op's match across ranks: (group, sequence, -1) for a collective, (sender, receiver, sequence)
// for a message. Keys are unique per instance; every member of it maps to the same key.
std::tuple<int, int64_t, int64_t> comm_key(int32_t rank, const traces::Op& op)
{
  switch (op.kind) {
  case traces::OpKind::Collective: return {op.group, op.sequence, -1};
  case traces::OpKind::Send: return {-2 - rank, op.peer, op.sequence};
  case traces::OpKind::Recv: return {-2 - op.peer, rank, op.sequence};
  default: return {std::numeric_limits<int>::min(), -1, -1};
  }
}

// When the last member of every communication op instance arrived (its latest start), by comm_key.
std::map<std::tuple<int, int64_t, int64_t>, int64_t> last_arrivals(const traces::OpGraph& trace)
{
  std::map<std::tuple<int, int64_t, int64_t>, int64_t> last;
  for (const traces::RankProgram& rank : trace.ranks)
    for (const traces::Op& op : rank.ops) {
      if (op.kind != traces::OpKind::Collective && op.kind != traces::OpKind::Send &&
          op.kind != traces::OpKind::Recv)
        continue;
      if (op.start_ns < 0 || op.duration_ns < 0)
        continue;
      const auto key = comm_key(rank.rank, op);
      const auto [it, inserted] = last.emplace(key, op.start_ns);
      if (!inserted)
        it->second = std::max(it->second, op.start_ns);
    }
  return last;
}

} // namespace

std::optional<int> trace_host_cores(const traces::OpGraph& trace)
{
  const auto it = trace.metadata.find("host_cores");
  if (it == trace.metadata.end())
    return std::nullopt;
  size_t used = 0;
  long long cores = 0;
  try {
    cores = std::stoll(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != it->second.size() || cores < 1 || cores > 1000000)
    throw traces::TraceError("metadata host_cores: expected a positive integer, got '" + it->second + "'");
  return static_cast<int>(cores);
}

double measured_iteration_s(const traces::OpGraph& trace)
{
  if (trace.measured_iteration_s.empty())
    return 0;
  const auto it = trace.metadata.find("traced_iteration");
  if (it != trace.metadata.end()) {
    const size_t index = static_cast<size_t>(std::stoll(it->second));
    if (index < trace.measured_iteration_s.size())
      return trace.measured_iteration_s[index];
  }
  std::vector<double> sorted = trace.measured_iteration_s;
  std::sort(sorted.begin(), sorted.end());
  return sorted[sorted.size() / 2];
}

AsMeasuredDurations::AsMeasuredDurations(const traces::OpGraph& trace, int host_cores, double copy_bytes_per_s)
{
  // On a shared host a communication op ends, for the ops after it, when its last member arrived and its bytes
  // were copied; the rest of its measured time the woken ranks waited for a core (below).
  const std::map<std::tuple<int, int64_t, int64_t>, int64_t> arrivals =
      host_cores > 0 ? last_arrivals(trace) : std::map<std::tuple<int, int64_t, int64_t>, int64_t>{};
  const auto comm_done_ns = [&](const traces::RankProgram& rank, const traces::Op& op) {
    const int64_t end = op.start_ns + op.duration_ns;
    const auto it = arrivals.find(comm_key(rank.rank, op));
    if (it == arrivals.end())
      return end;
    const double copy_ns = copy_bytes_per_s > 0 ? static_cast<double>(op.bytes) / copy_bytes_per_s * 1e9 : 0.0;
    return std::clamp(it->second + static_cast<int64_t>(copy_ns), op.start_ns, end);
  };
  // Issue gaps: the time between when an op could start and when it started.
  struct Span {
    size_t program;
    int64_t id, ready_ns, start_ns, end_ns;
  };
  std::vector<Span> spans;
  for (size_t p = 0; p < trace.ranks.size(); ++p) {
    std::unordered_map<int64_t, int64_t> end_ns;
    int64_t previous_end_ns = -1;
    for (const traces::Op& op : trace.ranks[p].ops) {
      if (op.start_ns < 0 || op.duration_ns < 0)
        continue;
      int64_t ready_ns = previous_end_ns;
      for (const int64_t d : op.deps)
        if (const auto it = end_ns.find(d); it != end_ns.end())
          ready_ns = std::max(ready_ns, it->second);
      const int64_t end = takes_a_core(op) ? op.start_ns + op.duration_ns : comm_done_ns(trace.ranks[p], op);
      if (takes_a_core(op)) {
        const bool has_gap = ready_ns >= 0 && op.kind == traces::OpKind::Compute;
        const int64_t gap = has_gap ? std::max<int64_t>(0, op.start_ns - ready_ns) : 0;
        spans.push_back(Span{p, op.id, op.start_ns - gap, op.start_ns, end});
      }
      end_ns[op.id] = end;
      previous_end_ns = std::max(previous_end_ns, end);
    }
  }
  // A rank holds a core over each compute op and the gap before it.
  std::optional<CoreShare> share;
  if (host_cores > 0) {
    std::vector<std::pair<int64_t, int64_t>> runnable;
    std::vector<int64_t> starts; // where each gap ends and its op begins
    runnable.reserve(spans.size());
    starts.reserve(spans.size());
    for (const Span& s : spans) {
      runnable.emplace_back(s.ready_ns, s.end_ns);
      starts.push_back(s.start_ns);
    }
    share.emplace(runnable, starts, host_cores);
  }
  ops_.resize(trace.ranks.size());
  for (const Span& s : spans) {
    Timed& t = ops_[s.program][s.id];
    t.gap_ns = s.start_ns - s.ready_ns;
    if (share) {
      t.gap_share = share->mean(s.ready_ns, s.start_ns);
      t.op_share = share->mean(s.start_ns, s.end_ns);
    }
  }
}

int64_t AsMeasuredDurations::issue_gap_ns(size_t program, int64_t op_id) const
{
  const auto& ops = ops_.at(program);
  const auto it = ops.find(op_id);
  return it == ops.end() ? 0 : it->second.gap_ns;
}

double AsMeasuredDurations::seconds(size_t program, const traces::Op& op, double compute_scale) const
{
  const auto& ops = ops_.at(program);
  const auto it = ops.find(op.id);
  const double duration_ns = static_cast<double>(op.duration_ns) / compute_scale;
  if (it == ops.end())
    return duration_ns * 1e-9;
  const Timed& t = it->second;
  return (duration_ns * t.op_share + static_cast<double>(t.gap_ns) * t.gap_share) * 1e-9;
}

} // namespace gputwin::sim
