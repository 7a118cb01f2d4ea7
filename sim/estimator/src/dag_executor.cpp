#include "gputwin/sim/dag_executor.hpp"

#include "gputwin/sim/host_issue.hpp"
#include "gputwin/sim/interference.hpp"
#include "gputwin/sim/stage_accounting.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace gputwin::sim {

namespace {

constexpr double never = -1;

// One op, compacted: what the longest-path pass needs and nothing else.
struct CompactOp {
  traces::OpKind kind = traces::OpKind::Compute;
  uint32_t stream = 0;      // index into the program's streams
  uint32_t deps_begin = 0;  // range in Program::deps
  uint32_t deps_end = 0;
  int32_t call = -1;        // collective: index into calls
  int32_t peer_program = -1; // recv: program of its send; send: program of its receiver
  int32_t peer_op = -1;      // recv: index of its send
};

struct Program {
  std::vector<CompactOp> ops;
  std::vector<uint32_t> deps;
  std::vector<std::vector<uint32_t>> stream_ops; // op indices per stream, in order
};

// Hash keys of the compiled programs' look-ups: a collective call (group, sequence) and a message (src, dst,
// sequence).
using MessageKey = std::tuple<int32_t, int32_t, int64_t>;

uint64_t mix_hash(uint64_t h, uint64_t v)
{
  uint64_t x = h * 0x9e3779b97f4a7c15ULL + v;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ULL;
  return x ^ (x >> 29);
}

struct GroupSequenceHash {
  size_t operator()(const std::pair<int32_t, int64_t>& k) const
  {
    return static_cast<size_t>(mix_hash(static_cast<uint32_t>(k.first), static_cast<uint64_t>(k.second)));
  }
};

struct MessageKeyHash {
  size_t operator()(const MessageKey& k) const
  {
    return static_cast<size_t>(mix_hash(mix_hash(static_cast<uint32_t>(std::get<0>(k)), static_cast<uint32_t>(std::get<1>(k))),
                                        static_cast<uint64_t>(std::get<2>(k))));
  }
};

// Per-run state of one program.
struct ProgramState {
  HostIssue host; // issue times
  std::vector<double> start_s, end_s;
  std::vector<double> wait_start_s; // only for a report (its stage accounting): else empty
  std::vector<size_t> stream_cursor;
  std::vector<double> stream_free_s;
  size_t done_prefix = 0;  // ops [0, done_prefix) have ended
  size_t sync_scanned = 0; // ends of ops [0, sync_scanned) folded into sync_max_end_s
  double sync_max_end_s = 0;
};

// Per-run state of one collective call: the same (group, sequence) on every member program.
struct CallState {
  int arrived = 0;
  double last_arrival_s = 0;
  std::vector<std::pair<uint32_t, uint32_t>> members; // (program, op) that arrived
};

} // namespace

struct DagExecutor::Compiled {
  std::vector<Program> programs;
  std::vector<int> call_expected; // members of each collective call
};

DagExecutor::DagExecutor(const std::vector<traces::RankProgram>& P, const std::vector<traces::CommGroup>& groups)
    : compiled_(std::make_unique<Compiled>())
{
  std::map<int32_t, size_t> program_of_rank;
  for (size_t p = 0; p < P.size(); ++p)
    program_of_rank[P[p].rank] = p;
  std::vector<int> members(groups.size(), 0);
  for (size_t g = 0; g < groups.size(); ++g)
    members[g] = static_cast<int>(std::count_if(groups[g].ranks.begin(), groups[g].ranks.end(),
                                                [&](int32_t r) { return program_of_rank.count(r) != 0; }));
  std::unordered_map<std::pair<int32_t, int64_t>, int32_t, GroupSequenceHash> call_of; // (group, sequence) -> call
  std::unordered_map<MessageKey, std::pair<int32_t, int32_t>, MessageKeyHash> sends;    // (src, dst, seq)
  compiled_->programs.resize(P.size());
  for (size_t p = 0; p < P.size(); ++p) {
    Program& c = compiled_->programs[p];
    c.ops.resize(P[p].ops.size());
    std::vector<int32_t> streams; // the program's streams in order of first use: a handful, searched in order
    for (size_t i = 0; i < P[p].ops.size(); ++i) {
      const traces::Op& op = P[p].ops[i];
      CompactOp& o = c.ops[i];
      if (op.id != static_cast<int64_t>(i))
        throw std::logic_error("execute_dag: op ids must be their indices (rank " + std::to_string(P[p].rank) + ")");
      o.kind = op.kind;
      const auto stream = static_cast<uint32_t>(std::find(streams.begin(), streams.end(), op.stream) - streams.begin());
      if (stream == streams.size()) {
        streams.push_back(op.stream);
        c.stream_ops.emplace_back();
      }
      c.stream_ops[stream].push_back(static_cast<uint32_t>(i));
      o.stream = stream;
      o.deps_begin = static_cast<uint32_t>(c.deps.size());
      for (const int64_t d : op.deps) {
        if (d < 0 || d >= op.id)
          throw std::logic_error("execute_dag: op " + std::to_string(op.id) + " depends on a later op");
        c.deps.push_back(static_cast<uint32_t>(d));
      }
      o.deps_end = static_cast<uint32_t>(c.deps.size());
      if (op.kind == traces::OpKind::Collective) {
        auto [call, fresh] =
            call_of.try_emplace({op.group, op.sequence}, static_cast<int32_t>(compiled_->call_expected.size()));
        if (fresh)
          compiled_->call_expected.push_back(members.at(static_cast<size_t>(op.group)));
        o.call = call->second;
      } else if (op.kind == traces::OpKind::Send) {
        sends[{P[p].rank, op.peer, op.sequence}] = {static_cast<int32_t>(p), static_cast<int32_t>(i)};
      }
    }
  }
  for (size_t p = 0; p < P.size(); ++p)
    for (size_t i = 0; i < P[p].ops.size(); ++i) {
      const traces::Op& op = P[p].ops[i];
      if (op.kind != traces::OpKind::Recv)
        continue;
      const auto send = sends.find({op.peer, P[p].rank, op.sequence});
      if (send == sends.end())
        throw std::logic_error("execute_dag: rank " + std::to_string(P[p].rank) + " op " + std::to_string(op.id) +
                               " (" + op.name + ") receives a message no program sends");
      compiled_->programs[p].ops[i].peer_program = send->second.first;
      compiled_->programs[p].ops[i].peer_op = send->second.second;
      compiled_->programs[static_cast<size_t>(send->second.first)].ops[static_cast<size_t>(send->second.second)]
          .peer_program = static_cast<int32_t>(p);
    }
}

DagExecutor::~DagExecutor() = default;
DagExecutor::DagExecutor(DagExecutor&&) noexcept = default;
DagExecutor& DagExecutor::operator=(DagExecutor&&) noexcept = default;

namespace {

class DagRun {
public:
  // `recycled_end_s` / `recycled_start_s` (may be null): a previous run's take_end_times / take_start_times, whose
  // memory this run reuses (a settle's passes would otherwise allocate and fault in every op's arrays each pass).
  DagRun(const std::vector<Program>& programs, const std::vector<int>& call_expected,
         const std::vector<std::vector<double>>& duration_s, const std::vector<HostProgram>& hosts,
         IterationResult* report, const std::vector<traces::RankProgram>* source, const IterationOptions& options,
         std::vector<std::vector<double>>* recycled_end_s = nullptr,
         std::vector<std::vector<double>>* recycled_start_s = nullptr)
      : programs_(programs), call_expected_(call_expected), duration_s_(duration_s), hosts_(hosts),
        report_(report), source_(source), options_(options)
  {
    const auto recycle = [&](std::vector<std::vector<double>>* from, size_t p, std::vector<double>& to) {
      if (from && p < from->size())
        to = std::move((*from)[p]);
    };
    if (!hosts_.empty() && hosts_.size() != programs_.size())
      throw std::logic_error("execute_dag: one host program per rank program expected");
    if (report_ && (!source_ || source_->size() != programs_.size()))
      throw std::logic_error("execute_dag: a report needs the programs the executor was built from");
    state_.resize(programs_.size());
    for (size_t p = 0; p < programs_.size(); ++p) {
      const size_t n = programs_[p].ops.size();
      ProgramState& s = state_[p];
      recycle(recycled_end_s, p, s.end_s);
      recycle(recycled_start_s, p, s.start_s);
      s.host = HostIssue(host(p), n);
      s.start_s.assign(n, 0);
      if (report_)
        s.wait_start_s.assign(n, 0);
      s.end_s.assign(n, never);
      s.stream_cursor.assign(programs_[p].stream_ops.size(), 0);
      s.stream_free_s.assign(programs_[p].stream_ops.size(), 0);
    }
    calls_.resize(call_expected_.size());
    if (report_) {
      report_->stages.assign(programs_.size(), StageTimes{});
      for (size_t p = 0; p < programs_.size(); ++p)
        accounting_.emplace_back(report_->stages[p], false,
                                 options_.record_micro_batch_shares ? &(*source_)[p] : nullptr);
    }
  }

  double run()
  {
    std::deque<size_t> dirty;
    std::vector<bool> queued(state_.size(), true);
    for (size_t p = 0; p < state_.size(); ++p)
      dirty.push_back(p);
    while (!dirty.empty()) {
      const size_t p = dirty.front();
      dirty.pop_front();
      queued[p] = false;
      advance(p, [&](size_t q) {
        if (!queued[q]) {
          queued[q] = true;
          dirty.push_back(q);
        }
      });
    }
    for (size_t p = 0; p < state_.size(); ++p)
      for (size_t i = 0; i < state_[p].end_s.size(); ++i)
        if (state_[p].end_s[i] == never) {
          std::string what = "op " + std::to_string(i);
          if (source_ && p < source_->size())
            what = "rank " + std::to_string((*source_)[p].rank) + " op " + std::to_string(i) + " (" +
                   (*source_)[p].ops[i].name + ")";
          throw std::logic_error("execute_dag: the programs cannot finish: " + what + " never runs");
        }
    if (report_) {
      report_->iteration_time_s = iteration_time_s_;
      report_->executed_ops = executed_ops_;
    }
    return iteration_time_s_;
  }

  // Each op's end, per program (after run()).
  std::vector<std::vector<double>> take_start_times()
  {
    std::vector<std::vector<double>> start_s;
    for (ProgramState& s : state_)
      start_s.push_back(std::move(s.start_s));
    return start_s;
  }

  std::vector<std::vector<double>> take_end_times()
  {
    std::vector<std::vector<double>> end_s;
    for (ProgramState& s : state_)
      end_s.push_back(std::move(s.end_s));
    return end_s;
  }

private:
  const HostProgram* host(size_t p) const { return hosts_.empty() ? nullptr : &hosts_[p]; }

  // Issues ops until the host must wait for the GPU (a synchronisation whose ops have not all ended).
  void issue(size_t p)
  {
    ProgramState& s = state_[p];
    HostIssue& host = s.host;
    for (;;) {
      if (host.waits()) {
        const size_t n = s.end_s.size();
        while (s.done_prefix < n && s.end_s[s.done_prefix] != never)
          ++s.done_prefix;
        if (s.done_prefix < host.issued())
          return;
        for (; s.sync_scanned < host.issued(); ++s.sync_scanned)
          s.sync_max_end_s = std::max(s.sync_max_end_s, s.end_s[s.sync_scanned]);
        host.resume(s.sync_max_end_s);
      }
      if (host.done())
        return;
      host.issue_to_sync();
    }
  }

  void finish(size_t p, size_t i, double end_s)
  {
    ProgramState& s = state_[p];
    const CompactOp& o = programs_[p].ops[i];
    s.end_s[i] = end_s;
    s.stream_free_s[o.stream] = end_s;
    ++s.stream_cursor[o.stream];
    ++executed_ops_;
    iteration_time_s_ = std::max(iteration_time_s_, end_s);
    if (report_) {
      const traces::RankProgram& program = (*source_)[p];
      accounting_[p].wait(program, program.ops[i], s.wait_start_s[i], s.start_s[i]);
      accounting_[p].op(program.ops[i], s.start_s[i], end_s);
      if (options_.record_timeline)
        report_->timeline.push_back(OpSlice{static_cast<int32_t>(p), static_cast<int64_t>(i), s.start_s[i], end_s});
    }
  }

  template <class Wake> void advance(size_t p, Wake&& wake)
  {
    ProgramState& s = state_[p];
    const Program& program = programs_[p];
    const double launch_s = s.host.launch_latency_s();
    for (bool progressed = true; progressed;) {
      progressed = false;
      issue(p);
      for (size_t stream = 0; stream < program.stream_ops.size(); ++stream) {
        const std::vector<uint32_t>& list = program.stream_ops[stream];
        while (s.stream_cursor[stream] < list.size()) {
          const size_t i = list[s.stream_cursor[stream]];
          const CompactOp& o = program.ops[i];
          if (i >= s.host.issued())
            break;
          double deps_s = 0;
          bool ready = true;
          for (uint32_t d = o.deps_begin; d < o.deps_end; ++d) {
            const double e = s.end_s[program.deps[d]];
            if (e == never) {
              ready = false;
              break;
            }
            deps_s = std::max(deps_s, e);
          }
          if (!ready)
            break;
          const double wait_start = std::max(s.stream_free_s[stream], s.host.issue_s(i) + launch_s);
          const double start = std::max(wait_start, deps_s);
          if (o.kind == traces::OpKind::Collective && call_expected_[static_cast<size_t>(o.call)] == 1) {
            // Its only simulated member (a folded stage's TP or DP collective, nearly all of them): it ends as the
            // general case below computes, without recording members (no allocation per call and run).
            if (report_)
              s.wait_start_s[i] = wait_start;
            s.start_s[i] = start;
            finish(p, i, std::max(0.0, start) + duration_s_[p][i]);
            progressed = true;
            continue;
          }
          if (o.kind == traces::OpKind::Collective) {
            CallState& call = calls_[static_cast<size_t>(o.call)];
            const std::pair<uint32_t, uint32_t> me{static_cast<uint32_t>(p), static_cast<uint32_t>(i)};
            if (std::find(call.members.begin(), call.members.end(), me) == call.members.end()) {
              if (report_)
                s.wait_start_s[i] = wait_start;
              s.start_s[i] = start;
              call.members.push_back(me);
              call.last_arrival_s = std::max(call.last_arrival_s, start);
              ++call.arrived;
            }
            if (call.arrived < call_expected_[static_cast<size_t>(o.call)])
              break;
            const double end = call.last_arrival_s + duration_s_[p][i];
            for (const auto& [q, j] : call.members) {
              finish(q, j, end);
              if (q != p)
                wake(q);
            }
            call.members.clear();
            call.arrived = -1; // completed
            progressed = true;
            continue;
          }
          if (report_)
            s.wait_start_s[i] = wait_start;
          s.start_s[i] = start;
          double end = start + (o.kind == traces::OpKind::Recv ? 0.0 : duration_s_[p][i]);
          if (o.kind == traces::OpKind::Recv) {
            const double sent =
                state_[static_cast<size_t>(o.peer_program)].end_s[static_cast<size_t>(o.peer_op)];
            if (sent == never)
              break;
            end = std::max(start, sent);
          }
          finish(p, i, end);
          if (o.kind == traces::OpKind::Send && o.peer_program >= 0)
            wake(static_cast<size_t>(o.peer_program));
          progressed = true;
        }
      }
    }
  }

  const std::vector<Program>& programs_;
  const std::vector<int>& call_expected_;
  const std::vector<std::vector<double>>& duration_s_;
  const std::vector<HostProgram>& hosts_;
  IterationResult* report_;
  const std::vector<traces::RankProgram>* source_;
  const IterationOptions& options_;
  std::vector<ProgramState> state_;
  std::vector<CallState> calls_;
  std::vector<StageAccounting> accounting_;
  double iteration_time_s_ = 0;
  int64_t executed_ops_ = 0;
};

} // namespace

double DagExecutor::run(const std::vector<std::vector<double>>& duration_s, const std::vector<HostProgram>& hosts,
                        IterationResult* report, const std::vector<traces::RankProgram>* programs,
                        const IterationOptions& options, std::vector<std::vector<double>>* end_s,
                        std::vector<std::vector<double>>* start_s) const
{
  DagRun run(compiled_->programs, compiled_->call_expected, duration_s, hosts, report, programs, options, end_s,
             start_s);
  const double t = run.run();
  if (end_s)
    *end_s = run.take_end_times();
  if (start_s)
    *start_s = run.take_start_times();
  return t;
}

IterationResult execute_dag(std::vector<traces::RankProgram> programs, const std::vector<traces::CommGroup>& groups,
                            const ComputeDuration& compute_s, const CommDuration& comm_s,
                            const std::vector<HostProgram>& hosts, const IterationOptions& options)
{
  std::vector<std::vector<double>> duration_s(programs.size());
  for (size_t p = 0; p < programs.size(); ++p)
    for (const traces::Op& op : programs[p].ops) {
      double d = 0;
      if (op.kind == traces::OpKind::Compute || op.kind == traces::OpKind::Memcpy)
        d = compute_s(p, op);
      else if (!options.zero_communication && op.kind != traces::OpKind::Recv)
        d = comm_s(p, op);
      duration_s[p].push_back(d);
    }
  DagExecutor executor(programs, groups);
  IterationResult result;
  executor.run(duration_s, hosts, &result, &programs, options);
  result.programs = std::move(programs);
  return result;
}

namespace {

// One transfer on the network in the contention-free schedule: a collective call (once, however many simulated
// members it has) or a pipeline message.
struct Transfer {
  double start_s = 0; // its flows start (after their route latency)
  double end_s = 0;   // its last flow ends (start + busiest)
  uint32_t load = 0;  // index into the loads
  uint32_t program = 0, op = 0; // the op that takes its duration (a collective's other members: `members`)
};

// The links two loads share: (position in the first's links, position in the second's).
using SharedLinks = std::vector<std::pair<uint32_t, uint32_t>>;

SharedLinks shared_links(const LinkLoad& a, const LinkLoad& b)
{
  SharedLinks shared;
  for (size_t i = 0, j = 0; i < a.links.size() && j < b.links.size();) {
    if (a.links[i].link < b.links[j].link)
      ++i;
    else if (b.links[j].link < a.links[i].link)
      ++j;
    else
      shared.emplace_back(static_cast<uint32_t>(i++), static_cast<uint32_t>(j++));
  }
  return shared;
}

// Stretches each transfer's time on every link by the bytes other transfers move on that link while it uses it,
// the way max-min sharing does: per pair of flows on the link, each moves at most what the other does while
// both have bytes left (equal shares), and no more than its own bytes in the overlap of their active intervals
// (a flow limited elsewhere leaves the rest to the other). A transfer then takes max over its links of (its
// bytes + others' bytes) / bandwidth, at least its contention-free time. Computed once, from the
// contention-free schedule; k equal transfers that start together on one link each take k times as long, a
// short one inside a long one twice as long while the long one gains the short one's bytes. A transfer that
// meets no other on any link keeps its duration exactly. Returns whether any transfer was stretched.
using OpRef = std::pair<uint32_t, uint32_t>; // (program, op)

bool add_contention(const topo::ClusterGraph& graph, const std::vector<const LinkLoad*>& loads,
                    std::vector<Transfer>& transfers, const std::vector<std::pair<OpRef, OpRef>>& members,
                    std::vector<std::vector<double>>& duration_s)
{
  std::sort(transfers.begin(), transfers.end(), [](const Transfer& x, const Transfer& y) {
    return x.start_s != y.start_s ? x.start_s < y.start_s : std::tie(x.program, x.op) < std::tie(y.program, y.op);
  });
  // Which links two loads share, computed when first needed.
  std::unordered_map<uint64_t, SharedLinks> shared;
  std::unordered_map<uint64_t, double> extra; // (transfer, position of the link in its load) -> bytes
  auto key = [](size_t t, uint32_t position) { return (static_cast<uint64_t>(t) << 32) | position; };
  for (size_t a = 0; a < transfers.size(); ++a) {
    const Transfer& x = transfers[a];
    for (size_t b = a + 1; b < transfers.size() && transfers[b].start_s < x.end_s; ++b) {
      const Transfer& y = transfers[b];
      auto found = shared.find((static_cast<uint64_t>(x.load) << 32) | y.load);
      if (found == shared.end())
        found = shared.emplace((static_cast<uint64_t>(x.load) << 32) | y.load,
                               shared_links(*loads[x.load], *loads[y.load])).first;
      for (const auto& [i, j] : found->second) {
        const LoadOnLink& u = loads[x.load]->links[i];
        const LoadOnLink& v = loads[y.load]->links[j];
        const double x_end = x.start_s + u.active_s, y_end = y.start_s + v.active_s;
        const double overlap_s = std::min(x_end, y_end) - y.start_s; // y.start_s >= x.start_s
        if (overlap_s <= 0)
          continue;
        const double x_flow = u.bytes / u.flows, y_flow = v.bytes / v.flows;
        extra[key(a, i)] += v.flows * std::min(y_flow * overlap_s / v.active_s, x_flow);
        extra[key(b, j)] += u.flows * std::min(x_flow * overlap_s / u.active_s, y_flow);
      }
    }
  }
  if (extra.empty())
    return false;
  std::unordered_map<uint32_t, double> busiest_s; // transfer -> its busiest link with the others' bytes
  for (const auto& [k, bytes] : extra) {
    const uint32_t t = static_cast<uint32_t>(k >> 32);
    const LoadOnLink& use = loads[transfers[t].load]->links[static_cast<uint32_t>(k)];
    const double s = (use.bytes + bytes) / nccl_link_bytes_per_s(graph.spec(), graph.links()[static_cast<size_t>(use.link)]);
    double& b = busiest_s[t];
    b = std::max(b, s);
  }
  for (const auto& [t, b] : busiest_s) {
    const Transfer& x = transfers[t];
    const LinkLoad& load = *loads[x.load];
    duration_s[x.program][x.op] = std::max(b, load.busiest_s) + load.route_latency_s + load.latency_s;
  }
  // A collective's other members take its first member's duration.
  for (const auto& [first, other] : members)
    duration_s[other.first][other.second] = duration_s[first.first][first.second];
  return true;
}

} // namespace

IterationResult execute_dag(const topo::ClusterGraph& graph, std::vector<traces::RankProgram> programs,
                            const std::vector<traces::CommGroup>& groups, CommSource& comm,
                            const ComputeDuration& compute_s, const std::vector<HostProgram>& hosts,
                            const IterationOptions& options, DagTiming timing)
{
  // Each communication op's load on the links (one per CommWork: repeated collectives share one), and whether
  // it may run alone (a TP collective the flow-level executor times without flows when none of its links
  // carries other traffic).
  constexpr uint32_t no_load = std::numeric_limits<uint32_t>::max();
  std::unordered_map<const CommWork*, uint32_t> load_index;
  std::vector<std::unique_ptr<LinkLoad>> owned;
  std::vector<const LinkLoad*> loads;
  std::vector<std::vector<uint32_t>> load_of(programs.size());
  std::vector<std::vector<bool>> alone_of(programs.size());
  std::vector<std::vector<double>> duration_s(programs.size());
  std::vector<bool> shared_link(graph.links().size(), false); // used by communication that cannot run alone
  std::vector<int> programs_of_group(groups.size(), 0);       // simulated members
  std::vector<int> last_program_of_group(groups.size(), -1);
  for (size_t p = 0; p < programs.size(); ++p)
    for (const traces::Op& op : programs[p].ops) {
      uint32_t load = no_load;
      bool alone = false;
      double d = 0;
      if (op.kind == traces::OpKind::Compute || op.kind == traces::OpKind::Memcpy) {
        d = compute_s(p, op);
      } else if (!options.zero_communication && op.kind != traces::OpKind::Recv) {
        const CommWork& work =
            op.kind == traces::OpKind::Collective ? comm.collective(op) : comm.message(programs[p].rank, op);
        const auto [it, fresh] = load_index.try_emplace(&work, static_cast<uint32_t>(loads.size()));
        if (fresh) {
          owned.push_back(std::make_unique<LinkLoad>(link_load(graph, work)));
          loads.push_back(owned.back().get());
        }
        load = it->second;
        d = loads[load]->duration_s();
        alone = op.kind == traces::OpKind::Collective && comm.may_run_alone(op);
        if (!alone)
          for (const LoadOnLink& use : loads[load]->links)
            shared_link[static_cast<size_t>(use.link)] = true;
        if (op.kind == traces::OpKind::Collective && op.group >= 0 && static_cast<size_t>(op.group) < groups.size() &&
            last_program_of_group[static_cast<size_t>(op.group)] != static_cast<int>(p)) {
          last_program_of_group[static_cast<size_t>(op.group)] = static_cast<int>(p);
          ++programs_of_group[static_cast<size_t>(op.group)];
        }
      }
      duration_s[p].push_back(d);
      load_of[p].push_back(load);
      alone_of[p].push_back(alone);
    }
  DagExecutor executor(programs, groups);
  IterationResult result;
  std::vector<std::vector<double>> end_s, start_s; // start_s: for settle, with interference
  const bool interferes = options.interference && !options.zero_communication && timing == DagTiming::Settled;
  executor.run(duration_s, hosts, &result, &programs, options, &end_s, interferes ? &start_s : nullptr);
  if (timing == DagTiming::ContentionFree) {
    result.programs = std::move(programs);
    return result;
  }
  // Compute-communication interference: compute ops slowed by the communication in flight on their GPU
  // (interference.hpp), settled before the links are shared and again after.
  std::unique_ptr<DagInterference> interference;
  if (interferes) {
    interference = std::make_unique<DagInterference>(graph, programs, comm, *options.interference, duration_s);
    interference->settle(executor, duration_s, hosts, programs, options, result, end_s, start_s);
  }
  if (!options.zero_communication) {
    // Transfers that overlap in the contention-free schedule and share a link slow each other down (once).
    std::vector<bool> meets_others(loads.size(), false); // a load that may run alone but touches a shared link
    for (size_t l = 0; l < loads.size(); ++l)
      meets_others[l] = std::any_of(loads[l]->links.begin(), loads[l]->links.end(),
                                    [&](const LoadOnLink& use) { return shared_link[static_cast<size_t>(use.link)]; });
    std::vector<Transfer> transfers;
    std::vector<std::pair<OpRef, OpRef>> members;            // (first member, another member) of a collective
    std::map<std::pair<int32_t, int64_t>, OpRef> first_member; // (group, sequence), groups with several programs
    for (size_t p = 0; p < programs.size(); ++p)
      for (size_t i = 0; i < programs[p].ops.size(); ++i) {
        const uint32_t load = load_of[p][i];
        if (load == no_load || loads[load]->busiest_s <= 0 || (alone_of[p][i] && !meets_others[load]))
          continue;
        const traces::Op& op = programs[p].ops[i];
        const OpRef me{static_cast<uint32_t>(p), static_cast<uint32_t>(i)};
        if (op.kind == traces::OpKind::Collective && op.group >= 0 && static_cast<size_t>(op.group) < groups.size() &&
            programs_of_group[static_cast<size_t>(op.group)] > 1) {
          const auto [it, fresh] = first_member.try_emplace({op.group, op.sequence}, me);
          if (!fresh) {
            members.emplace_back(it->second, me);
            continue;
          }
        }
        const double start = end_s[p][i] - loads[load]->latency_s - loads[load]->busiest_s;
        transfers.push_back({start, start + loads[load]->busiest_s, load, me.first, me.second});
      }
    if (add_contention(graph, loads, transfers, members, duration_s)) {
      result = IterationResult{};
      executor.run(duration_s, hosts, &result, &programs, options, &end_s, interference ? &start_s : nullptr);
      if (interference)
        interference->settle(executor, duration_s, hosts, programs, options, result, end_s, start_s);
    }
  }
  result.programs = std::move(programs);
  return result;
}

} // namespace gputwin::sim
