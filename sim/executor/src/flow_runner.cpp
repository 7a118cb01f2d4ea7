#include "gputwin/sim/flow_runner.hpp"

#include "gputwin/sim/link_components.hpp"

#include "gputwin/sim/flow_set.hpp"
#include "gputwin/sim/steady_state.hpp" // shortcuts_enabled

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <numeric>
#include <tuple>
#include <unordered_map>

namespace sg4 = simgrid::s4u;

namespace gputwin::sim {

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();
constexpr size_t kNotLogged = std::numeric_limits<size_t>::max(); // no flow log, or not in it

struct Route {
  std::vector<int> links; // directed link ids
  double latency_s = 0;   // sum of the links' latencies, paid before the transfer
  int src_gpu = 0;
  int dst_gpu = 0;
  sg4::Host* src = nullptr; // the SimGrid transfer hosts, once a SimGrid flow used the route (State::send)
  sg4::Host* dst = nullptr;
};

// A SimGrid flow a run waits for: the route it holds in the ledger and its record in the flow log.
struct SimgridFlow {
  sg4::CommPtr comm;
  Route* route = nullptr;
  size_t log_index = kNotLogged;
};

// Flows of one run() that share links with each other (a connected component) and whose links carry nothing
// else: timed by their own max-min solution (FlowSet). When another transfer starts on one of its links, the
// group is converted: every active flow's remaining bytes become a SimGrid flow from that instant.
struct Group {
  explicit Group(const std::vector<double>& capacity) : set(capacity) {}
  FlowSet set;
  std::vector<Route*> routes; // per flow of `set`
  std::vector<size_t> log_index;    // per flow of `set`
  double last_end_s = 0;            // the latest end of a flow of `set`
  int32_t component = -1;           // the run's component it times (run_flows)
  bool converted = false;
  bool remainders_ready = false;      // converted, and every remainder's SimGrid flow exists
  double wake_s = kNever;             // converted: when the owner looks again if the remainders are not ready
  std::vector<SimgridFlow> remainders; // converted: the SimGrid flows of what was left
};

// SimGrid moves whole bytes; a flow timed here moves as many as its SimGrid twin would.
double wire_bytes(double bytes)
{
  return std::ceil(std::max(bytes, 0.0));
}

} // namespace

struct FlowRunner::State {
  State(const SimgridPlatform& p, const topo::ClusterGraph& g)
      : platform(p), graph(g), holder_on_link(g.links().size(), -1), simgrid_on_link(g.links().size(), 0),
        link_scratch(g.links().size(), -1)
  {
    for (const topo::Link& link : g.links())
      capacity.push_back(SimgridPlatform::effective_bytes_per_s(g.spec(), link));
  }

  Route& route(int src_gpu, int dst_gpu)
  {
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(src_gpu)) << 32) | static_cast<uint32_t>(dst_gpu);
    auto found = routes.find(key);
    if (found != routes.end())
      return found->second;
    Route r;
    r.links = graph.route(src_gpu, dst_gpu);
    r.latency_s = platform.route_latency_s(src_gpu, dst_gpu); // throws when the platform has no such route
    r.src_gpu = src_gpu;
    r.dst_gpu = dst_gpu;
    return routes.emplace(key, std::move(r)).first->second;
  }

  // A SimGrid flow of `bytes` on `r`, from now (its hosts looked up once: most routes never need them).
  sg4::CommPtr send(Route& r, uint64_t bytes)
  {
    if (r.src == nullptr)
      std::tie(r.src, r.dst) = platform.transfer_endpoints(r.src_gpu, r.dst_gpu);
    return sg4::Comm::sendto_async(r.src, r.dst, bytes);
  }

  // Brings group `id` to `now_s`: its flows due by then end (and free their links in the ledger).
  void advance(int32_t id, double now_s)
  {
    Group& g = *groups[static_cast<size_t>(id)];
    g.set.advance(
        now_s,
        [&](int32_t f, double end_s) {
          g.last_end_s = std::max(g.last_end_s, end_s);
          log_end(g.log_index[static_cast<size_t>(f)], end_s);
        },
        [&](int link) {
          if (holder_on_link[static_cast<size_t>(link)] == id)
            holder_on_link[static_cast<size_t>(link)] = -1;
        });
  }

  // The group holding `link` with a flow still moving at `now_s`, or -1.
  int32_t live_holder(int link, double now_s)
  {
    const int32_t holder = holder_on_link[static_cast<size_t>(link)];
    if (holder >= 0)
      advance(holder, now_s);
    return holder_on_link[static_cast<size_t>(link)];
  }

  // Group `id` shares its links from now on: the ledger moves its active flows to the SimGrid side, and their
  // remaining bytes are queued in `pending` (start_remainders creates their SimGrid flows).
  void convert(int32_t id, double now_s, std::vector<std::pair<int32_t, std::vector<uint64_t>>>& pending)
  {
    Group& g = *groups[static_cast<size_t>(id)];
    advance(id, now_s);
    g.wake_s = std::max(g.set.next_end_s(), now_s);
    std::vector<int32_t> flows = g.set.active_flows();
    std::sort(flows.begin(), flows.end());
    std::vector<uint64_t> bytes;
    for (const int32_t f : flows) {
      bytes.push_back(static_cast<uint64_t>(wire_bytes(g.set.remaining_bytes(f, now_s))));
      for (const int link : g.routes[static_cast<size_t>(f)]->links) {
        if (holder_on_link[static_cast<size_t>(link)] == id)
          holder_on_link[static_cast<size_t>(link)] = -1;
        ++simgrid_on_link[static_cast<size_t>(link)];
      }
      const size_t i = static_cast<size_t>(f);
      g.remainders.push_back(SimgridFlow{nullptr, g.routes[i], g.log_index[i]});
    }
    stats.converted_flows += static_cast<int64_t>(flows.size());
    g.converted = true; // its owner waits for the remainders (created below, at the same simulated time)
    pending.emplace_back(id, std::move(bytes));
  }

  // Starts the SimGrid flows of converted groups. Every SimGrid call lets other actors run, so the ledger is
  // brought up to date before any is made; groups are found again by id (their slots stay until their owner frees
  // them, which it does only once the remainders are ready).
  void start_remainders(const std::vector<std::pair<int32_t, std::vector<uint64_t>>>& pending)
  {
    for (const auto& [id, bytes] : pending) {
      for (size_t k = 0; k < bytes.size(); ++k) {
        sg4::CommPtr comm = send(*groups[static_cast<size_t>(id)]->remainders[k].route, bytes[k]);
        groups[static_cast<size_t>(id)]->remainders[k].comm = comm;
        // The remainder belongs to the calling actor, and SimGrid cancels an actor's activities when it ends: the
        // caller must outlive it (settle()).
        created_by[sg4::this_actor::get_pid()].push_back(std::move(comm));
      }
      groups[static_cast<size_t>(id)]->remainders_ready = true;
    }
  }

  int32_t new_group()
  {
    int32_t id;
    if (free_groups.empty()) {
      id = static_cast<int32_t>(groups.size());
      groups.push_back(nullptr);
    } else {
      id = free_groups.back();
      free_groups.pop_back();
    }
    if (groups[static_cast<size_t>(id)] == nullptr)
      groups[static_cast<size_t>(id)] = std::make_unique<Group>(capacity);
    return id;
  }

  // The slot is reused, its memory kept (most groups are single flows: no allocation per flow).
  void free_group(int32_t id)
  {
    Group& g = *groups[static_cast<size_t>(id)];
    g.set.clear();
    g.routes.clear();
    g.log_index.clear();
    g.last_end_s = 0;
    g.component = -1;
    g.converted = false;
    g.remainders_ready = false;
    g.wake_s = kNever;
    g.remainders.clear();
    free_groups.push_back(id);
  }

  // Starts the transfer of `bytes` on `r` now, in group `own` of its run's component (-1: none yet, set when one
  // is created). Returns true when the flow joined `own`; else `comm` is its SimGrid flow.
  bool start_transfer(Route& r, double bytes, double now_s, int32_t& own, size_t log_index, sg4::CommPtr& comm)
  {
    std::vector<std::pair<int32_t, std::vector<uint64_t>>> pending;
    if (own >= 0 && groups[static_cast<size_t>(own)]->converted)
      own = -1; // its owner collects it; the component starts a new group
    if (shortcut) {
      bool blocked = false;
      bool touches_own = false;
      std::vector<int32_t> foreign;
      for (const int link : r.links) {
        const int32_t holder = live_holder(link, now_s);
        if (holder >= 0 && holder == own)
          touches_own = true;
        else if (holder >= 0 && std::find(foreign.begin(), foreign.end(), holder) == foreign.end())
          foreign.push_back(holder);
        blocked = blocked || simgrid_on_link[static_cast<size_t>(link)] > 0;
      }
      if (!blocked && foreign.empty()) {
        if (own < 0)
          own = new_group();
        Group& g = *groups[static_cast<size_t>(own)];
        advance(own, now_s);
        g.set.add(r.links.data(), r.links.size(), wire_bytes(bytes), now_s);
        g.routes.push_back(&r);
        g.log_index.push_back(log_index);
        for (const int link : r.links)
          holder_on_link[static_cast<size_t>(link)] = own;
        ++stats.fast_flows;
        return true;
      }
      for (const int32_t id : foreign)
        convert(id, now_s, pending);
      if (touches_own)
        convert(own, now_s, pending);
    }
    for (const int link : r.links)
      ++simgrid_on_link[static_cast<size_t>(link)];
    ++stats.simgrid_flows;
    start_remainders(pending);
    comm = send(r, static_cast<uint64_t>(wire_bytes(bytes)));
    return false;
  }

  double run_flows(const Flow* flows, size_t count, int64_t tag);
  // Component of each of the flows (index of its first flow), by shared links; all 0..count-1 without the shortcut.
  std::vector<int32_t> components(const std::vector<Route*>& flow_routes);

  // The flow log (set_flow_log): a flow's record opens when its transfer starts and closes when it ends.
  size_t log_start(const Flow& f, double now_s, int64_t tag)
  {
    if (log == nullptr)
      return kNotLogged;
    log->flows.push_back(FlowRecord{f.src_gpu, f.dst_gpu, f.bytes, now_s, now_s, tag});
    return log->flows.size() - 1;
  }
  void log_end(size_t index, double end_s)
  {
    if (log != nullptr && index != kNotLogged)
      log->flows[index].end_s = end_s;
  }

  void release_simgrid(const Route& r)
  {
    for (const int link : r.links)
      --simgrid_on_link[static_cast<size_t>(link)];
  }

  const SimgridPlatform& platform;
  const topo::ClusterGraph& graph;
  std::vector<double> capacity;               // per directed link: SimGrid's bandwidth
  std::unordered_map<uint64_t, Route> routes; // node-based: references stay valid
  std::vector<int32_t> holder_on_link;        // per directed link: the group holding it, or -1
  std::vector<int32_t> simgrid_on_link;       // per directed link: SimGrid flows on it
  std::vector<int32_t> link_scratch;          // components(): a flow on each link, else -1 (reset after use)
  std::vector<std::unique_ptr<Group>> groups; // slots, reused through free_groups
  std::vector<int32_t> free_groups;
  std::unordered_map<aid_t, std::vector<sg4::CommPtr>> created_by; // remainders started on behalf of others
  FlowRunnerStats stats;
  bool shortcut = shortcuts_enabled(); // GPUTWIN_EXACT=1: every flow through SimGrid's max-min
  FlowLog* log = nullptr;
};

FlowRunner::FlowRunner(const SimgridPlatform& platform, const topo::ClusterGraph& graph)
    : state_(std::make_unique<State>(platform, graph))
{
}

FlowRunner::~FlowRunner() = default;

const FlowRunnerStats& FlowRunner::stats() const
{
  return state_->stats;
}

void FlowRunner::set_shortcut(bool enabled)
{
  state_->shortcut = enabled;
}

void FlowRunner::set_flow_log(FlowLog* log)
{
  state_->log = log;
}

void FlowRunner::settle()
{
  for (;;) {
    const auto mine = state_->created_by.find(sg4::this_actor::get_pid());
    if (mine == state_->created_by.end())
      return;
    const std::vector<sg4::CommPtr> comms = std::move(mine->second);
    state_->created_by.erase(mine);
    for (const sg4::CommPtr& comm : comms)
      comm->wait();
  }
}

void FlowRunner::run(const std::vector<Flow>& flows, double latency_s, int64_t log_tag)
{
  const double end_s = std::max(sg4::Engine::get_clock(), state_->run_flows(flows.data(), flows.size(), log_tag));
  sg4::this_actor::sleep_until(end_s + latency_s);
}

std::vector<int32_t> FlowRunner::State::components(const std::vector<Route*>& flow_routes)
{
  if (!shortcut) {
    std::vector<int32_t> alone(flow_routes.size());
    std::iota(alone.begin(), alone.end(), 0);
    return alone;
  }
  return link_components(
      flow_routes.size(), [&](size_t i) -> const std::vector<int>& { return flow_routes[i]->links; }, link_scratch);
}

// Runs flows[0, count) from now and returns when the last has arrived, with its arrival time.
double FlowRunner::State::run_flows(const Flow* flows, size_t count, int64_t tag)
{
  State& s = *this;
  const double t0 = sg4::Engine::get_clock();
  std::vector<Route*> flow_routes;
  flow_routes.reserve(count);
  for (size_t i = 0; i < count; ++i)
    flow_routes.push_back(&s.route(flows[i].src_gpu, flows[i].dst_gpu));
  // Transfers start after their route's latency: in that order.
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return flow_routes[a]->latency_s < flow_routes[b]->latency_s; });
  const std::vector<int32_t> component = s.components(flow_routes);
  std::vector<int32_t> group_of(count, -1); // per component (indexed by its first flow): its current group

  std::vector<int32_t> mine_groups;
  std::deque<SimgridFlow> mine_comms;
  double end_s = t0;
  size_t next = 0;
  for (;;) {
    const double now_s = sg4::Engine::get_clock();
    for (; next < order.size() && t0 + flow_routes[order[next]]->latency_s <= now_s; ++next) {
      const size_t i = order[next];
      const size_t logged = s.log_start(flows[i], now_s, tag);
      int32_t& own = group_of[static_cast<size_t>(component[i])];
      const int32_t before = own;
      sg4::CommPtr comm;
      if (!s.start_transfer(*flow_routes[i], flows[i].bytes, now_s, own, logged, comm))
        mine_comms.push_back(SimgridFlow{std::move(comm), flow_routes[i], logged});
      if (own >= 0 && own != before) {
        s.groups[static_cast<size_t>(own)]->component = component[i];
        mine_groups.push_back(own);
      }
    }
    double wake_s = next < order.size() ? t0 + flow_routes[order[next]]->latency_s : kNever;
    for (size_t k = 0; k < mine_groups.size();) {
      const int32_t id = mine_groups[k];
      Group& g = *s.groups[static_cast<size_t>(id)];
      if (g.converted && !g.remainders_ready) {
        wake_s = std::min(wake_s, g.wake_s); // its remainders start now, from the converting actor: look again later
        ++k;
        continue;
      }
      if (!g.converted) {
        s.advance(id, now_s);
        if (!g.set.active_flows().empty()) {
          wake_s = std::min(wake_s, g.set.next_end_s());
          ++k;
          continue;
        }
      }
      end_s = std::max(end_s, g.last_end_s);
      for (SimgridFlow& f : g.remainders)
        mine_comms.push_back(std::move(f));
      if (group_of[static_cast<size_t>(g.component)] == id)
        group_of[static_cast<size_t>(g.component)] = -1;
      s.free_group(id);
      mine_groups[k] = mine_groups.back();
      mine_groups.pop_back();
    }
    if (mine_comms.empty()) {
      if (wake_s == kNever)
        break;
      if (wake_s > now_s)
        sg4::this_actor::sleep_until(wake_s);
      else
        sg4::this_actor::yield(); // due now (an empty flow), or remainders another actor is creating at this instant
      continue;
    }
    // Wait for the SimGrid flows in order (each observed once: linear in their number), but no longer than the
    // next event of this run. A flow that ended while an earlier one was awaited is released late: its links
    // then refuse the shortcut a little longer, which costs speed, never exactness.
    SimgridFlow& f = mine_comms.front();
    if (wake_s == kNever)
      f.comm->wait();
    else if (sg4::Comm::wait_any_for({f.comm}, wake_s - now_s) < 0)
      continue;
    end_s = std::max(end_s, f.comm->get_finish_time());
    s.log_end(f.log_index, f.comm->get_finish_time());
    s.release_simgrid(*f.route);
    mine_comms.pop_front();
  }
  return end_s;
}

} // namespace gputwin::sim
