#include "gputwin/sim/program_executor.hpp"

#include "gputwin/sim/flow_runner.hpp"
#include "gputwin/sim/host_issue.hpp"
#include "gputwin/sim/interference.hpp"
#include "gputwin/sim/lone_transfer.hpp"
#include "gputwin/sim/stage_accounting.hpp"

#include "wake_signal.hpp"

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace sg4 = simgrid::s4u;

namespace gputwin::sim {

namespace {

// An actor of a program (its host or one of its streams) blocked until one op has ended or has been issued.
// Each actor waits on its own signal and is woken only by the event it waits for: with a program-wide one every
// op's end would wake every stream of the rank to find it had nothing to do. `wake` is what the actor blocks on,
// whatever it waits for (this signal, a rendezvous, its GPU's load).
struct Waiter {
  enum class For { Nothing, OpDone, OpIssued };
  For waits_for = For::Nothing;
  size_t op = 0;
  ActorWake wake;
  WakeSignal signal;
};

// A point where actors wait for one event: a collective's completion or a message's arrival.
struct Rendezvous {
  int arrived = 0;
  bool done = false;
  WakeSignal signal;
  // Interference (sim/interference.hpp): a collective's member programs; a message's flows while they move, the
  // program waiting for it and the load its arrival puts there.
  std::vector<size_t> programs;
  const CommWork* work = nullptr;
  int64_t receiver = -1;
  const traces::Op* recv_op = nullptr;
  CommLoad receiver_load;
  bool receiver_loaded = false;
};

class ProgramRun {
public:
  ProgramRun(const topo::ClusterGraph& graph, std::vector<traces::RankProgram> programs,
             const std::vector<traces::CommGroup>& groups, CommSource& comm, const ComputeDuration& compute_s,
             const IterationOptions& options, const std::vector<HostProgram>& hosts, IterationResult& result)
      : graph_(graph), comm_(comm), compute_s_(compute_s), options_(options), hosts_(hosts), result_(result)
  {
    if (!hosts_.empty() && hosts_.size() != programs.size())
      throw std::logic_error("execute_programs: one host program per rank program expected");
    result_.programs = std::move(programs);
    works_ = distinct_works();
    platform_ = std::make_unique<SimgridPlatform>(graph, flow_pairs());
    runner_ = std::make_unique<FlowRunner>(*platform_, graph);
    runner_->set_flow_log(options_.flow_log);
    result_.platform_links = platform_->link_count();
    const size_t count = result_.programs.size();
    result_.stages.resize(count);
    for (size_t p = 0; p < count; ++p)
      accounting_.emplace_back(result_.stages[p], options_.flow_log != nullptr && !options_.link_usage,
                               options_.record_micro_batch_shares ? &result_.programs[p] : nullptr);
    issued_.assign(count, 0);
    for (size_t p = 0; p < count; ++p) {
      total_ops_ += static_cast<int64_t>(result_.programs[p].ops.size());
      program_of_rank_[result_.programs[p].rank] = p;
      done_.emplace_back(result_.programs[p].ops.size(), false);
      if (!hosts_.empty())
        host_issue_.emplace_back(&hosts_[p], result_.programs[p].ops.size());
    }
    for (const traces::CommGroup& g : groups)
      group_members_.push_back(static_cast<int>(
          std::count_if(g.ranks.begin(), g.ranks.end(), [&](int32_t r) { return program_of_rank_.count(r) != 0; })));
    find_links_shared_outside_tp();
    for (size_t p = 0; p < count; ++p)
      precompute_program(p);
    if (interferes()) {
      load_.assign(count, CommLoad{});
      in_flight_.assign(count, 0);
      for (size_t p = 0; p < count; ++p)
        load_signal_.emplace_back();
    }
  }

  void run()
  {
    waiters_.resize(result_.programs.size());
    stream_ops_.resize(result_.programs.size());
    for (size_t p = 0; p < result_.programs.size(); ++p) {
      std::map<int32_t, std::vector<size_t>> by_stream;
      const auto& ops = result_.programs[p].ops;
      for (size_t i = 0; i < ops.size(); ++i)
        by_stream[ops[i].stream].push_back(i);
      waiters_[p] = std::vector<Waiter>(by_stream.size() + 1); // one per stream, the last for the host
      if (hosts_.empty())
        issued_[p] = ops.size();
      else
        sg4::Actor::create("rank" + std::to_string(result_.programs[p].rank) + ".host",
                           platform_->host(result_.programs[p].rank), [this, p] { run_host(p); });
      for (auto& [stream, indices] : by_stream) {
        const size_t w = stream_ops_[p].size();
        stream_ops_[p].push_back(std::move(indices));
        sg4::Actor::create("rank" + std::to_string(result_.programs[p].rank) + ".stream" + std::to_string(stream),
                           platform_->host(result_.programs[p].rank),
                           [this, p, w] { run_stream(p, w, stream_ops_[p][w]); });
      }
    }
    platform_->engine().run();
  }

private:
  const CommWork& work_of(size_t p, const traces::Op& op)
  {
    if (op.kind == traces::OpKind::Collective)
      return comm_.collective(op);
    return comm_.message(result_.programs[p].rank, op);
  }

  // The distinct communication work of every program, and whether some op of it may not run alone. (The comm
  // source hands out one CommWork per distinct collective or message: thousands of ops share a few works.)
  std::vector<std::pair<const CommWork*, bool>> distinct_works()
  {
    std::unordered_map<const CommWork*, bool> shared;
    for (size_t p = 0; p < result_.programs.size(); ++p)
      for (const traces::Op& op : result_.programs[p].ops)
        if (op.kind == traces::OpKind::Collective || op.kind == traces::OpKind::Send) {
          const bool alone = op.kind == traces::OpKind::Collective && comm_.may_run_alone(op);
          auto [it, inserted] = shared.emplace(&work_of(p, op), !alone);
          if (!inserted && !alone)
            it->second = true;
        }
    std::vector<std::pair<const CommWork*, bool>> works(shared.begin(), shared.end());
    // Pointer order is not reproducible between runs; what is built from the list must not depend on it.
    return works;
  }

  // Every ordered GPU pair a flow of any communication op uses: what the platform needs routes for.
  std::vector<std::pair<int, int>> flow_pairs()
  {
    std::set<std::pair<int, int>> pairs;
    for (const auto& [work, shared] : works_)
      for (const Flow& f : work->flows)
        pairs.emplace(f.src_gpu, f.dst_gpu);
    return {pairs.begin(), pairs.end()};
  }

  // Links that communication other than the collectives allowed to run alone may put flows on.
  void find_links_shared_outside_tp()
  {
    for (const auto& [work, shared] : works_)
      if (shared)
        for (const Flow& f : work->flows)
          for (const int link : graph_.route(f.src_gpu, f.dst_gpu))
            shared_links_.insert(link);
  }

  // A TP collective whose flows no other traffic can touch -- one flow per link, no link shared with
  // communication outside the TP groups, and its group's collectives never overlap each other (they are
  // ordered on the compute and TP streams) -- takes exactly what SimGrid would compute for lone flows
  // (lone_flows_duration_s). Returns -1 when the collective must run as flows.
  double exclusive_duration_s(const CommWork& work)
  {
    const auto cached = exclusive_.find(&work);
    if (cached != exclusive_.end())
      return cached->second;
    return exclusive_[&work] =
               lone_flows_duration_s(graph_, work, [&](int link) { return shared_links_.count(link) != 0; });
  }

  // Records the flows of collective i of program p, timed alone from `start_s` (exclusive_duration_s), in the flow log.
  void log_flows_alone(size_t p, size_t i, double start_s)
  {
    for (const Flow& f : work_of(p, result_.programs[p].ops[i]).flows) {
      const LoneRoute lone = lone_route(graph_, graph_.route(f.src_gpu, f.dst_gpu));
      options_.flow_log->flows.push_back(FlowRecord{f.src_gpu, f.dst_gpu, f.bytes, lone.first_byte_s(start_s),
                                                    lone.end_s(start_s, f.bytes), flow_tag(p, i)});
    }
  }

  // Fixed durations (compute; TP collectives that run alone on their links) and which ops others wait for.
  void precompute_program(size_t p)
  {
    const auto& ops = result_.programs[p].ops;
    fixed_s_.emplace_back(ops.size(), -1.0);
    dep_target_.emplace_back(ops.size(), false);
    if (!hosts_.empty()) {
      // The host waits for every op up to a synchronising one: the last such op of each stream ends a run.
      std::map<int32_t, size_t> last_on_stream;
      for (size_t i = 0; i < ops.size(); ++i) {
        last_on_stream[ops[i].stream] = i;
        if (hosts_[p].syncs[i])
          for (const auto& [stream, last] : last_on_stream)
            dep_target_[p][last] = true;
      }
    }
    int32_t compute_stream = no_compute; // the one stream of its compute and memcpy ops (quiet)
    for (size_t i = 0; i < ops.size(); ++i) {
      const traces::Op& op = ops[i];
      for (const int64_t d : op.deps) {
        if (d < 0 || d >= static_cast<int64_t>(i)) // as execute_dag: a program lists an op after what it waits for
          throw std::logic_error("execute_programs: op " + std::to_string(i) + " depends on a later op");
        dep_target_[p][static_cast<size_t>(d)] = true;
      }
      if (is_compute(op)) {
        fixed_s_[p][i] = compute_s_(p, op);
        compute_stream = compute_stream == no_compute || compute_stream == op.stream ? op.stream : several_compute_streams;
      } else if (comm_.may_run_alone(op) && group_members_[static_cast<size_t>(op.group)] == 1) {
        fixed_s_[p][i] = options_.zero_communication ? 0.0 : exclusive_duration_s(comm_.collective(op));
      }
    }
    compute_stream_.push_back(compute_stream);
  }

  // Blocks actor `w` of program p until `until` holds, woken by the event it names.
  template <class Until>
  void block(size_t p, size_t w, Waiter::For event, size_t op, Until until)
  {
    Waiter& waiter = waiters_[p][w];
    waiter.waits_for = event;
    waiter.op = op;
    while (!until())
      waiter.signal.wait(waiter.wake);
    waiter.waits_for = Waiter::For::Nothing;
  }

  void op_done(size_t p, size_t i)
  {
    done_[p][i] = true;
    for (Waiter& w : waiters_[p])
      if (w.waits_for == Waiter::For::OpDone && w.op == i)
        w.signal.notify_all();
  }

  void ops_issued(size_t p, size_t count)
  {
    issued_[p] = count;
    for (Waiter& w : waiters_[p])
      if (w.waits_for == Waiter::For::OpIssued && w.op < count)
        w.signal.notify_all();
  }

  void wait_for_deps(size_t p, size_t w, const traces::Op& op)
  {
    for (const int64_t d : op.deps) {
      const size_t dep = static_cast<size_t>(d);
      if (!done_[p][dep])
        block(p, w, Waiter::For::OpDone, dep, [&] { return done_[p][dep]; });
    }
  }

  void account(size_t p, const traces::Op& op, double start, double end)
  {
    accounting_[p].op(op, start, end);
    if (++result_.executed_ops % 65536 == 0 && options_.progress)
      options_.progress(result_.executed_ops, total_ops_);
    result_.iteration_time_s = std::max(result_.iteration_time_s, end);
  }

  // The host of program p (HostIssue): issue times are given ahead up to each op that synchronises the host, so
  // they cost no simulated events; there the host actor waits until every op issued so far has ended.
  void run_host(size_t p)
  {
    HostIssue& host = host_issue_[p];
    const size_t me = waiters_[p].size() - 1;
    for (;;) {
      host.issue_to_sync();
      ops_issued(p, host.issued());
      if (!host.waits())
        return;
      // Every op issued so far has ended when the last issued op of each stream has: a stream runs its ops in order.
      // (One wait per stream, not one per op still running.)
      for (const std::vector<size_t>& stream : stream_ops_[p]) {
        const auto after = std::lower_bound(stream.begin(), stream.end(), host.issued());
        if (after == stream.begin())
          continue;
        const size_t awaited = *(after - 1);
        if (!done_[p][awaited])
          block(p, me, Waiter::For::OpDone, awaited, [&] { return bool(done_[p][awaited]); });
      }
      host.resume(sg4::Engine::get_clock());
    }
  }

  // When op i of program p may start on its stream: issued, plus the launch latency.
  double earliest_start_s(size_t p, size_t i) const
  {
    return hosts_.empty() ? 0.0 : host_issue_[p].earliest_start_s(i);
  }

  void wait_for_issue(size_t p, size_t w, size_t i)
  {
    if (issued_[p] <= i)
      block(p, w, Waiter::For::OpIssued, i, [&] { return issued_[p] > i; });
    const double earliest = earliest_start_s(p, i);
    if (earliest > sg4::Engine::get_clock())
      sg4::this_actor::sleep_until(earliest);
  }

  void run_stream(size_t p, size_t w, const std::vector<size_t>& indices)
  {
    const auto& ops = result_.programs[p].ops;
    const int32_t rank = result_.programs[p].rank;
    for (size_t k = 0; k < indices.size();) {
      const size_t i = indices[k];
      const traces::Op& op = ops[i];
      wait_for_issue(p, w, i);
      const double wait_start = sg4::Engine::get_clock();
      wait_for_deps(p, w, op);
      const double start = sg4::Engine::get_clock();
      accounting_[p].wait(result_.programs[p], op, wait_start, start);
      if (fixed_s_[p][i] >= 0 && interferes()) {
        k = run_fixed_interfered(p, w, indices, k, start);
        continue;
      }

      if (fixed_s_[p][i] >= 0) {
        // A run of fixed-duration ops that nothing else waits for in between is one sleep: the same times
        // (each op starting when its predecessor ends or the host issued it, whichever is later), far fewer
        // simulation events. Only ops the host has already issued join the run. On a host whose cores the ranks
        // share, a compute op is an execution of its own there, slowed by the others running (simgrid_platform.hpp).
        const bool on_cores = platform_->shares_cores() &&
                              (op.kind == traces::OpKind::Compute || op.kind == traces::OpKind::Memcpy);
        size_t last = k;
        double end_s = start + fixed_s_[p][i];
        while (!on_cores && !dep_target_[p][indices[last]] && last + 1 < indices.size() &&
               fixed_s_[p][indices[last + 1]] >= 0 && ops[indices[last + 1]].deps.empty() &&
               issued_[p] > indices[last + 1]) {
          ++last;
          end_s = std::max(end_s, earliest_start_s(p, indices[last])) + fixed_s_[p][indices[last]];
        }
        if (on_cores) {
          platform_->compute_on_cores(rank, fixed_s_[p][i], options_.ranks_per_program);
          end_s = sg4::Engine::get_clock();
        } else {
          sg4::this_actor::sleep_until(end_s);
        }
        double t = start;
        for (size_t j = k; j <= last; ++j) {
          const size_t op_index = indices[j];
          const double op_start = j == k ? start : std::max(t, earliest_start_s(p, op_index));
          const double end = j == last ? end_s : op_start + fixed_s_[p][op_index];
          account(p, ops[op_index], op_start, end);
          if (options_.flow_log && ops[op_index].kind == traces::OpKind::Collective && !options_.zero_communication)
            log_flows_alone(p, op_index, op_start);
          if (options_.record_timeline)
            result_.timeline.push_back(OpSlice{static_cast<int32_t>(p), static_cast<int64_t>(op_index), op_start, end});
          op_done(p, op_index);
          t = end;
        }
        k = last + 1;
        continue;
      }

      switch (op.kind) {
      case traces::OpKind::Collective: run_collective(p, w, op); break;
      case traces::OpKind::Send: run_send(p, rank, op); break;
      case traces::OpKind::Recv: post_receive(p, rank, op); wait_message(p, w, op.peer, rank, op.sequence); break;
      default: break;
      }
      const double end = sg4::Engine::get_clock();
      account(p, op, start, end);
      if (options_.record_timeline)
        result_.timeline.push_back(OpSlice{static_cast<int32_t>(p), static_cast<int64_t>(i), start, end});
      op_done(p, i);
      ++k;
    }
  }

  // --- Compute-communication interference (options_.interference, sim/interference.hpp) ---

  bool interferes() const
  {
    return options_.interference != nullptr && !options_.zero_communication && !platform_->shares_cores();
  }

  static bool is_compute(const traces::Op& op)
  {
    return op.kind == traces::OpKind::Compute || op.kind == traces::OpKind::Memcpy;
  }

  // The load communication op `op` (`work`: its flows; a receive: its send's) puts on program p's GPU.
  CommLoad load_of(size_t p, const CommWork& work, const traces::Op& op)
  {
    const int32_t gpu = result_.programs[p].rank;
    const auto key = std::make_tuple(&work, gpu, op.kind);
    auto it = comm_loads_.find(key);
    if (it == comm_loads_.end())
      it = comm_loads_.emplace(key, comm_op_load(graph_, *options_.interference, work, op, gpu)).first;
    return it->second;
  }

  // Communication starts (ends) on program p's GPU: compute ops running there re-plan at once.
  void begin_load(size_t p, const CommLoad& load)
  {
    if (load.empty())
      return;
    ++in_flight_[p];
    load_[p] += load;
    load_signal_[p].notify_all();
  }

  void end_load(size_t p, const CommLoad& load)
  {
    if (load.empty())
      return;
    if (--in_flight_[p] == 0)
      load_[p] = CommLoad{}; // exactly none, as LoadTimeline
    else
      load_[p] -= load;
    load_signal_[p].notify_all();
  }

  // The rate compute op `op` of program p progresses at now (1 for a measured duration, and for a quiet collective).
  double rate_of(size_t p, const traces::Op& op) const
  {
    return op.duration_ns >= 0 || !is_compute(op) ? 1.0 : interference_rate(*options_.interference, op, load_[p]);
  }

  // A collective of fixed duration (alone on its links) whose load on its GPU slows no op: every compute op of
  // program p runs on the collective's own stream, one after another, so none can run while it does. It runs in a
  // chain of fixed-duration ops like a compute op of rate 1, with no load put on the GPU.
  // Op by op (a timeline for the user, its slices in the order ops end), every collective loads its GPU as before.
  bool quiet(size_t p, const traces::Op& op) const
  {
    return !op_by_op() && op.kind == traces::OpKind::Collective &&
           (compute_stream_[p] == op.stream || compute_stream_[p] == no_compute);
  }

  // A timeline for the user: compute ops one wait each, so that its slices stay in the order ops end. (A
  // steady-state sample's timeline, which also records micro-batch shares, is only read op by op.)
  bool op_by_op() const { return options_.record_timeline && !options_.record_micro_batch_shares; }

  // Op i of program p, of fixed duration, ran from start to end.
  void finish_fixed(size_t p, size_t i, double start, double end)
  {
    const traces::Op& op = result_.programs[p].ops[i];
    account(p, op, start, end);
    if (options_.flow_log && op.kind == traces::OpKind::Collective)
      log_flows_alone(p, i, start);
    if (options_.record_timeline)
      result_.timeline.push_back(OpSlice{static_cast<int32_t>(p), static_cast<int64_t>(i), start, end});
    op_done(p, i);
  }

  // Under interference, op indices[k] of fixed duration (issued, dependencies met) from `start`, and the compute
  // ops that join it in one run on the same conditions as the plain sleep's. A collective run alone puts its load
  // on the GPU while it runs; compute ops progress at the rate the load in flight allows (RatedProgress), woken to
  // re-plan whenever communication starts or ends on the GPU. Returns the position after the last op run.
  size_t run_fixed_interfered(size_t p, size_t w, const std::vector<size_t>& indices, size_t k, double start)
  {
    const auto& ops = result_.programs[p].ops;
    if (!is_compute(ops[indices[k]]) && !quiet(p, ops[indices[k]])) {
      const size_t i = indices[k];
      const double end = start + fixed_s_[p][i];
      const CommLoad load = load_of(p, comm_.collective(ops[i]), ops[i]);
      begin_load(p, load);
      sg4::this_actor::sleep_until(end);
      end_load(p, load);
      finish_fixed(p, i, start, end);
      return k + 1;
    }
    if (op_by_op())
      return run_compute_interfered_per_op(p, w, indices, k, start);
    // The ops joinable now, each at its rate under the load now, are one wait until the last one's end: the load
    // cannot change unnoticed, so each op starts when its predecessor ends (or the host issued it, whichever is
    // later) and ends as rate-based progress from there gives, exactly the ends the per-op loop computes. Woken
    // early by a load change, the ops ended by then are done, the one in progress (if not in an issue gap) has
    // progressed to now at its rate, and the rest are planned again from it at the new rate.
    struct Planned {
      size_t j;            // position in indices
      double start, end;   // as planned
      double rate;         // under the load when planned
    };
    std::vector<Planned> chain;
    size_t j = k;
    double op_start = start;
    RatedProgress progress{start, fixed_s_[p][indices[k]]};
    for (;;) {
      chain.clear();
      const double rate = rate_of(p, ops[indices[j]]);
      chain.push_back(Planned{j, op_start, progress.end_at(rate), rate});
      while (joins_next(p, indices, chain.back().j)) {
        const size_t m = chain.back().j + 1;
        const size_t i = indices[m];
        const double s = std::max(chain.back().end, earliest_start_s(p, i));
        const double r = rate_of(p, ops[i]);
        chain.push_back(Planned{m, s, RatedProgress{s, fixed_s_[p][i]}.end_at(r), r});
      }
      const double chain_end = chain.back().end;
      if (chain_end > sg4::Engine::get_clock() && load_signal_[p].wait_until(waiters_[p][w].wake, chain_end)) {
        const double now = sg4::Engine::get_clock();
        if (now < chain_end) {
          size_t c = 0;
          for (; chain[c].end <= now; ++c)
            finish_fixed(p, indices[chain[c].j], chain[c].start, chain[c].end);
          const Planned& q = chain[c];
          if (q.j != j)
            progress = RatedProgress{q.start, fixed_s_[p][indices[q.j]]};
          if (now >= progress.t)
            progress.advance(now, q.rate); // the load changed: the rest at the new rate
          j = q.j;
          op_start = q.start;
          continue;
        }
      }
      for (const Planned& c : chain)
        finish_fixed(p, indices[c.j], c.start, c.end);
      const size_t last = chain.back().j;
      if (!joins_next(p, indices, last))
        return last + 1;
      j = last + 1;
      op_start = std::max(chain.back().end, earliest_start_s(p, indices[j]));
      progress = RatedProgress{op_start, fixed_s_[p][indices[j]]};
    }
  }

  // Whether the op after indices[j] (a compute op of fixed duration) joins its run: the same conditions as the
  // plain sleep's, checked now.
  bool joins_next(size_t p, const std::vector<size_t>& indices, size_t j) const
  {
    const auto& ops = result_.programs[p].ops;
    if (dep_target_[p][indices[j]] || j + 1 >= indices.size())
      return false;
    const size_t next = indices[j + 1];
    return fixed_s_[p][next] >= 0 && (is_compute(ops[next]) || quiet(p, ops[next])) && ops[next].deps.empty() &&
           issued_[p] > next;
  }

  // run_fixed_interfered's compute ops one wait each, as they were before runs were planned whole: with a
  // timeline, whose slices are in the order ops ended, so that it stays the same.
  size_t run_compute_interfered_per_op(size_t p, size_t w, const std::vector<size_t>& indices, size_t k,
                                       double start)
  {
    const auto& ops = result_.programs[p].ops;
    size_t j = k;
    double op_start = start;
    RatedProgress progress{start, fixed_s_[p][indices[k]]};
    for (;;) {
      const size_t i = indices[j];
      const double rate = rate_of(p, ops[i]);
      const double end = progress.end_at(rate);
      if (end > sg4::Engine::get_clock() && load_signal_[p].wait_until(waiters_[p][w].wake, end)) {
        const double now = sg4::Engine::get_clock();
        if (now < end) {
          progress.advance(now, rate); // the load changed: the rest at the new rate
          continue;
        }
      }
      finish_fixed(p, i, op_start, end);
      if (dep_target_[p][i] || j + 1 >= indices.size())
        return j + 1;
      const size_t next = indices[j + 1];
      if (fixed_s_[p][next] < 0 || !is_compute(ops[next]) || !ops[next].deps.empty() || issued_[p] <= next)
        return j + 1;
      ++j;
      op_start = std::max(end, earliest_start_s(p, next));
      if (op_start > sg4::Engine::get_clock())
        sg4::this_actor::sleep_until(op_start);
      progress = RatedProgress{op_start, fixed_s_[p][next]};
    }
  }

  // A message starts to move: its sender's GPU, and its receiver's if the receive is already posted, carry it.
  CommLoad begin_message_load(size_t p, int32_t rank, const traces::Op& send, const CommWork& work)
  {
    Rendezvous& rv = messages_[{rank, send.peer, send.sequence}];
    rv.work = &work;
    const CommLoad load = load_of(p, work, send);
    begin_load(p, load);
    if (rv.receiver >= 0) {
      rv.receiver_load = load_of(static_cast<size_t>(rv.receiver), work, *rv.recv_op);
      begin_load(static_cast<size_t>(rv.receiver), rv.receiver_load);
      rv.receiver_loaded = true;
    }
    return load;
  }

  void end_message_load(size_t p, int32_t rank, const traces::Op& send, const CommLoad& load)
  {
    Rendezvous& rv = messages_[{rank, send.peer, send.sequence}];
    end_load(p, load);
    if (rv.receiver_loaded)
      end_load(static_cast<size_t>(rv.receiver), rv.receiver_load);
    rv.receiver_loaded = false;
    rv.work = nullptr;
  }

  // A receive is posted: from now until its message has arrived, the message's flows load this GPU while they move.
  void post_receive(size_t p, int32_t rank, const traces::Op& recv)
  {
    if (!interferes())
      return;
    Rendezvous& rv = messages_[{recv.peer, rank, recv.sequence}];
    if (rv.done)
      return;
    rv.receiver = static_cast<int64_t>(p);
    rv.recv_op = &recv;
    if (rv.work) {
      rv.receiver_load = load_of(p, *rv.work, recv);
      begin_load(p, rv.receiver_load);
      rv.receiver_loaded = true;
    }
  }

  void run_collective(size_t p, size_t w, const traces::Op& op)
  {
    Rendezvous& rv = collectives_[{op.group, op.sequence}];
    if (interferes())
      rv.programs.push_back(p);
    if (++rv.arrived < group_members_[static_cast<size_t>(op.group)]) {
      while (!rv.done)
        rv.signal.wait(waiters_[p][w].wake);
      return;
    }
    if (!options_.zero_communication) {
      const CommWork& work = work_of(p, op);
      count_flows(p, op, work);
      std::vector<CommLoad> loads; // interference: every member's GPU carries the collective while it moves data
      if (interferes())
        for (const size_t q : rv.programs) {
          loads.push_back(load_of(q, work, op));
          begin_load(q, loads.back());
        }
      runner_->run(work.flows, work.latency_s, flow_tag(p, static_cast<size_t>(&op - result_.programs[p].ops.data())));
      for (size_t m = 0; m < loads.size(); ++m)
        end_load(rv.programs[m], loads[m]);
    }
    rv.done = true;
    rv.signal.notify_all();
  }

  // The flows of communication op `op` of program p, counted in the result and in its micro-batch's share.
  void count_flows(size_t p, const traces::Op& op, const CommWork& work)
  {
    result_.simulated_flows += static_cast<int64_t>(work.flows.size());
    accounting_[p].flows(op, static_cast<int64_t>(work.flows.size()));
  }

  void run_send(size_t p, int32_t rank, const traces::Op& op)
  {
    if (!options_.zero_communication) {
      const CommWork& work = work_of(p, op);
      count_flows(p, op, work);
      const CommLoad load = interferes() ? begin_message_load(p, rank, op, work) : CommLoad{};
      runner_->run(work.flows, work.latency_s, flow_tag(p, static_cast<size_t>(&op - result_.programs[p].ops.data())));
      if (interferes())
        end_message_load(p, rank, op, load);
    }
    Rendezvous& rv = messages_[{rank, op.peer, op.sequence}];
    rv.done = true;
    rv.signal.notify_all();
  }

  void wait_message(size_t p, size_t w, int32_t src, int32_t dst, int64_t sequence)
  {
    Rendezvous& rv = messages_[{src, dst, sequence}];
    while (!rv.done)
      rv.signal.wait(waiters_[p][w].wake);
  }

  const topo::ClusterGraph& graph_;
  CommSource& comm_;
  const ComputeDuration& compute_s_;
  const IterationOptions& options_;
  const std::vector<HostProgram>& hosts_;
  IterationResult& result_;
  std::vector<std::pair<const CommWork*, bool>> works_; // distinct works; true: not only ops that may run alone
  std::unique_ptr<SimgridPlatform> platform_;
  std::unique_ptr<FlowRunner> runner_;
  std::map<int32_t, size_t> program_of_rank_;
  std::vector<std::vector<bool>> done_;
  std::vector<std::vector<double>> fixed_s_;
  std::vector<std::vector<bool>> dep_target_;
  std::vector<StageAccounting> accounting_;
  std::vector<HostIssue> host_issue_;         // per program with a host: its issue times
  int64_t total_ops_ = 0;
  std::vector<size_t> issued_;               // per program: ops [0, issued) have an issue time
  std::vector<std::vector<Waiter>> waiters_; // per program: one per stream, then the host
  std::vector<std::vector<std::vector<size_t>>> stream_ops_; // per program and stream (waiters_' order): its ops
  std::vector<int> group_members_;
  std::unordered_set<int> shared_links_;
  std::unordered_map<const CommWork*, double> exclusive_;
  std::map<std::pair<int32_t, int64_t>, Rendezvous> collectives_;
  std::map<std::tuple<int32_t, int32_t, int64_t>, Rendezvous> messages_;
  // Interference: per program the communication in flight on its GPU, how many ops carry it, and a condition
  // variable its running compute ops wait on; loads per (work, GPU, op kind).
  std::vector<CommLoad> load_;
  std::vector<int> in_flight_;
  // Per program: the one stream its compute and memcpy ops run on, or one of these.
  static constexpr int32_t no_compute = -1, several_compute_streams = -2;
  std::vector<int32_t> compute_stream_;
  std::vector<WakeSignal> load_signal_;
  std::map<std::tuple<const CommWork*, int32_t, traces::OpKind>, CommLoad> comm_loads_;
};

} // namespace

IterationResult execute_programs(const topo::ClusterGraph& graph, std::vector<traces::RankProgram> programs,
                                 const std::vector<traces::CommGroup>& groups, CommSource& comm,
                                 const ComputeDuration& compute_s, const IterationOptions& options,
                                 const std::vector<HostProgram>& hosts)
{
  IterationResult result;
  ProgramRun run(graph, std::move(programs), groups, comm, compute_s, options, hosts, result);
  run.run();
  return result;
}

} // namespace gputwin::sim
