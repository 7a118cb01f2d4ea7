#include "gputwin/sim/dag_executor.hpp"

#include "gputwin/sim/stage_accounting.hpp"

#include <algorithm>
#include <deque>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace gputwin::sim {

double nccl_link_bytes_per_s(const topo::ClusterSpec& spec, const topo::Link& link)
{
  switch (link.kind) {
  case topo::LinkKind::Nvlink: return link.bytes_per_s * spec.nccl.nvlink_efficiency;
  case topo::LinkKind::Pcie: return link.bytes_per_s * spec.nccl.pcie_efficiency;
  case topo::LinkKind::NicToFabric:
  case topo::LinkKind::Fabric: return link.bytes_per_s * spec.nccl.net_efficiency;
  }
  return link.bytes_per_s;
}

double contention_free_duration_s(const topo::ClusterGraph& graph, const CommWork& work)
{
  std::unordered_map<int, double> bytes_on_link;
  double route_latency_s = 0;
  for (const Flow& f : work.flows) {
    double latency_s = 0;
    for (const int link : graph.route(f.src_gpu, f.dst_gpu)) {
      bytes_on_link[link] += f.bytes;
      latency_s += graph.links()[static_cast<size_t>(link)].latency_s;
    }
    route_latency_s = std::max(route_latency_s, latency_s);
  }
  double busiest_s = 0;
  for (const auto& [link, bytes] : bytes_on_link)
    busiest_s =
        std::max(busiest_s, bytes / nccl_link_bytes_per_s(graph.spec(), graph.links()[static_cast<size_t>(link)]));
  return busiest_s + route_latency_s + work.latency_s;
}

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

// Per-run state of one program.
struct ProgramState {
  std::vector<double> issue_s, start_s, wait_start_s, end_s;
  std::vector<size_t> stream_cursor;
  std::vector<double> stream_free_s;
  size_t issued = 0; // ops [0, issued) have an issue time
  double host_free_s = 0;
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
  std::map<std::pair<int32_t, int64_t>, int32_t> call_of; // (group, sequence) -> call
  std::map<std::tuple<int32_t, int32_t, int64_t>, std::pair<int32_t, int32_t>> sends; // (src, dst, seq)
  compiled_->programs.resize(P.size());
  for (size_t p = 0; p < P.size(); ++p) {
    Program& c = compiled_->programs[p];
    c.ops.resize(P[p].ops.size());
    std::map<int32_t, uint32_t> stream_index;
    for (size_t i = 0; i < P[p].ops.size(); ++i) {
      const traces::Op& op = P[p].ops[i];
      CompactOp& o = c.ops[i];
      if (op.id != static_cast<int64_t>(i))
        throw std::logic_error("execute_dag: op ids must be their indices (rank " + std::to_string(P[p].rank) + ")");
      o.kind = op.kind;
      auto [it, added] = stream_index.try_emplace(op.stream, static_cast<uint32_t>(c.stream_ops.size()));
      if (added)
        c.stream_ops.emplace_back();
      c.stream_ops[it->second].push_back(static_cast<uint32_t>(i));
      o.stream = it->second;
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
  DagRun(const std::vector<Program>& programs, const std::vector<int>& call_expected,
         const std::vector<std::vector<double>>& duration_s, const std::vector<HostProgram>& hosts,
         IterationResult* report, const std::vector<traces::RankProgram>* source, const IterationOptions& options)
      : programs_(programs), call_expected_(call_expected), duration_s_(duration_s), hosts_(hosts),
        report_(report), source_(source), options_(options)
  {
    if (!hosts_.empty() && hosts_.size() != programs_.size())
      throw std::logic_error("execute_dag: one host program per rank program expected");
    if (report_ && (!source_ || source_->size() != programs_.size()))
      throw std::logic_error("execute_dag: a report needs the programs the executor was built from");
    state_.resize(programs_.size());
    for (size_t p = 0; p < programs_.size(); ++p) {
      const size_t n = programs_[p].ops.size();
      ProgramState& s = state_[p];
      s.issue_s.assign(n, 0);
      s.start_s.assign(n, 0);
      s.wait_start_s.assign(n, 0);
      s.end_s.assign(n, never);
      s.stream_cursor.assign(programs_[p].stream_ops.size(), 0);
      s.stream_free_s.assign(programs_[p].stream_ops.size(), 0);
    }
    calls_.resize(call_expected_.size());
    if (report_) {
      report_->stages.assign(programs_.size(), StageTimes{});
      for (size_t p = 0; p < programs_.size(); ++p)
        accounting_.emplace_back(report_->stages[p]);
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

private:
  const HostProgram* host(size_t p) const { return hosts_.empty() ? nullptr : &hosts_[p]; }

  // Issues ops until the host must wait for the GPU (a synchronisation whose ops have not all ended).
  void issue(size_t p)
  {
    ProgramState& s = state_[p];
    const HostProgram* h = host(p);
    const size_t n = s.end_s.size();
    if (h == nullptr) {
      s.issued = n;
      return;
    }
    while (s.issued < n) {
      const size_t i = s.issued;
      if (i > 0 && h->syncs[i - 1]) {
        while (s.done_prefix < n && s.end_s[s.done_prefix] != never)
          ++s.done_prefix;
        if (s.done_prefix < i)
          return;
        for (; s.sync_scanned < i; ++s.sync_scanned)
          s.sync_max_end_s = std::max(s.sync_max_end_s, s.end_s[s.sync_scanned]);
        s.host_free_s = std::max(s.host_free_s, s.sync_max_end_s);
      }
      s.host_free_s += h->issue_cost_s[i];
      s.issue_s[i] = s.host_free_s;
      ++s.issued;
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
    const HostProgram* h = host(p);
    const double launch_s = h ? h->launch_latency_s : 0;
    for (bool progressed = true; progressed;) {
      progressed = false;
      issue(p);
      for (size_t stream = 0; stream < program.stream_ops.size(); ++stream) {
        const std::vector<uint32_t>& list = program.stream_ops[stream];
        while (s.stream_cursor[stream] < list.size()) {
          const size_t i = list[s.stream_cursor[stream]];
          const CompactOp& o = program.ops[i];
          if (i >= s.issued)
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
          const double wait_start = std::max(s.stream_free_s[stream], s.issue_s[i] + launch_s);
          const double start = std::max(wait_start, deps_s);
          if (o.kind == traces::OpKind::Collective) {
            CallState& call = calls_[static_cast<size_t>(o.call)];
            const std::pair<uint32_t, uint32_t> me{static_cast<uint32_t>(p), static_cast<uint32_t>(i)};
            if (std::find(call.members.begin(), call.members.end(), me) == call.members.end()) {
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
                        const IterationOptions& options) const
{
  DagRun run(compiled_->programs, compiled_->call_expected, duration_s, hosts, report, programs, options);
  return run.run();
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

IterationResult execute_dag(const topo::ClusterGraph& graph, std::vector<traces::RankProgram> programs,
                            const std::vector<traces::CommGroup>& groups, CommSource& comm,
                            const ComputeDuration& compute_s, const std::vector<HostProgram>& hosts,
                            const IterationOptions& options)
{
  std::vector<int32_t> rank_of_program;
  for (const traces::RankProgram& program : programs)
    rank_of_program.push_back(program.rank);
  std::unordered_map<const CommWork*, double> cache;
  const CommDuration comm_s = [&](size_t p, const traces::Op& op) {
    const CommWork& work =
        op.kind == traces::OpKind::Collective ? comm.collective(op) : comm.message(rank_of_program[p], op);
    const auto [it, fresh] = cache.try_emplace(&work, 0.0);
    if (fresh)
      it->second = contention_free_duration_s(graph, work);
    return it->second;
  };
  return execute_dag(std::move(programs), groups, compute_s, comm_s, hosts, options);
}

} // namespace gputwin::sim
