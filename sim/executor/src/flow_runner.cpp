#include "gputwin/sim/flow_runner.hpp"

#include "gputwin/sim/flow_network.hpp"
#include "gputwin/sim/steady_state.hpp" // shortcuts_enabled

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
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

// A SimGrid flow a run waits for (shortcut off) and its record in the flow log.
struct SimgridFlow {
  sg4::CommPtr comm;
  size_t log_index = kNotLogged;
};

// A run() waiting for its flows in the network: how many are still moving, when the last ended, and the semaphore
// the network actor releases when none is left.
struct RunWait {
  int64_t outstanding = 0;
  double end_s = 0;
  bool waiting = false; // its actor waits on `done`
  sg4::SemaphorePtr done;
};

// What the network needs to know about one of its flows when it ends.
struct FlowOwner {
  int32_t run = -1;
  size_t log_index = kNotLogged;
};

// SimGrid moves whole bytes; a flow timed here moves as many as its SimGrid twin would.
double wire_bytes(double bytes)
{
  return std::ceil(std::max(bytes, 0.0));
}

} // namespace

struct FlowRunner::State {
  State(const SimgridPlatform& p, const topo::ClusterGraph& g) : platform(p), graph(g), capacity(capacities(g)), network(capacity)
  {
  }

  static std::vector<double> capacities(const topo::ClusterGraph& g)
  {
    std::vector<double> c;
    for (const topo::Link& link : g.links())
      c.push_back(SimgridPlatform::effective_bytes_per_s(g.spec(), link));
    return c;
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

  // --- The project's own network (shortcut on) ---

  int32_t new_run()
  {
    int32_t id;
    if (free_runs.empty()) {
      id = static_cast<int32_t>(runs.size());
      runs.emplace_back();
      runs.back().done = sg4::Semaphore::create(0);
    } else {
      id = free_runs.back();
      free_runs.pop_back();
    }
    RunWait& w = runs[static_cast<size_t>(id)];
    w.outstanding = 0;
    w.end_s = 0;
    w.waiting = false;
    return id;
  }

  // The flows the network reported ended: their records close, and a run whose last flow ended is woken.
  void handle_ended()
  {
    for (const EndedFlow& e : ended) {
      const FlowOwner owner = owner_of[static_cast<size_t>(e.flow)];
      log_end(owner.log_index, e.end_s);
      RunWait& w = runs[static_cast<size_t>(owner.run)];
      w.end_s = std::max(w.end_s, e.end_s);
      if (--w.outstanding == 0 && w.waiting)
        w.done->release();
    }
    ended.clear();
  }

  // Starts a flow in the network now, for run `run`.
  void start_in_network(const Route& r, double bytes, double now_s, int32_t run, size_t log_index)
  {
    const int32_t id = network.add(r.links.data(), r.links.size(), wire_bytes(bytes), now_s, ended);
    if (owner_of.size() <= static_cast<size_t>(id))
      owner_of.resize(static_cast<size_t>(id) + 1);
    owner_of[static_cast<size_t>(id)] = FlowOwner{run, log_index};
    ++runs[static_cast<size_t>(run)].outstanding;
    ++stats.fast_flows;
    handle_ended();
  }

  // After flows started: the network actor looks again if the next end came before the one it sleeps until.
  void wake_network_if_sooner()
  {
    if (!*network_alive)
      start_network_actor();
    else if (network.next_end_s() < network_wake_s && !network_woken) {
      network_woken = true;
      network_wake->release();
    }
  }

  // The actor that ends the network's flows on time: it sleeps until the next end (or until a run's new flows
  // make an earlier one), then ends what is due. A daemon: SimGrid ends it with the last actor that runs flows.
  void start_network_actor()
  {
    // A fresh flag per actor, shared with its exit callback: SimGrid may end the daemon after this runner is gone.
    network_alive = std::make_shared<bool>(true);
    network_woken = false;
    network_wake = sg4::Semaphore::create(0);
    sg4::ActorPtr actor = sg4::Actor::create("flow-network", sg4::this_actor::get_host(), [this, alive = network_alive] {
      sg4::this_actor::on_exit([alive](bool) { *alive = false; });
      for (;;) {
        const double now_s = sg4::Engine::get_clock();
        network.advance(now_s, ended);
        handle_ended();
        network_wake_s = network.next_end_s();
        network_woken = false;
        if (network_wake_s == kNever)
          network_wake->acquire();
        else
          network_wake->acquire_timeout(network_wake_s - now_s);
      }
    });
    actor->daemonize();
  }

  double run_in_network(const Flow* flows, const std::vector<Route*>& flow_routes, const std::vector<size_t>& order,
                        int64_t tag);
  double run_in_simgrid(const Flow* flows, const std::vector<Route*>& flow_routes, const std::vector<size_t>& order,
                        int64_t tag);
  double run_flows(const Flow* flows, size_t count, int64_t tag);

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

  const SimgridPlatform& platform;
  const topo::ClusterGraph& graph;
  std::vector<double> capacity;               // per directed link: SimGrid's bandwidth
  std::unordered_map<uint64_t, Route> routes; // node-based: references stay valid
  FlowNetwork network;                        // every flow while the shortcut is on
  std::vector<EndedFlow> ended;               // scratch: what the network reported ended
  std::vector<FlowOwner> owner_of;            // per network flow id
  std::vector<RunWait> runs;                  // slots, reused through free_runs
  std::vector<int32_t> free_runs;
  std::shared_ptr<bool> network_alive = std::make_shared<bool>(false); // the network actor exists (it dies with
                                                                       // each SimGrid run's last actor)
  bool network_woken = false; // a release of network_wake is pending
  double network_wake_s = kNever;
  sg4::SemaphorePtr network_wake;
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

void FlowRunner::run(const std::vector<Flow>& flows, double latency_s, int64_t log_tag)
{
  const double end_s = std::max(sg4::Engine::get_clock(), state_->run_flows(flows.data(), flows.size(), log_tag));
  sg4::this_actor::sleep_until(end_s + latency_s);
}

// Starts each flow after its route's latency, in the network, and returns when the last has arrived, with its
// arrival time.
double FlowRunner::State::run_in_network(const Flow* flows, const std::vector<Route*>& flow_routes,
                                         const std::vector<size_t>& order, int64_t tag)
{
  const double t0 = sg4::Engine::get_clock();
  const int32_t run = new_run();
  for (size_t next = 0; next < order.size();) {
    const double start_s = t0 + flow_routes[order[next]]->latency_s;
    if (start_s > sg4::Engine::get_clock())
      sg4::this_actor::sleep_until(start_s);
    const double now_s = sg4::Engine::get_clock();
    for (; next < order.size() && t0 + flow_routes[order[next]]->latency_s <= now_s; ++next) {
      const size_t i = order[next];
      start_in_network(*flow_routes[i], flows[i].bytes, now_s, run, log_start(flows[i], now_s, tag));
    }
    wake_network_if_sooner();
  }
  RunWait& w = runs[static_cast<size_t>(run)];
  if (w.outstanding > 0) {
    w.waiting = true;
    const sg4::SemaphorePtr done = w.done; // `runs` may grow while this actor waits
    done->acquire();
  }
  const double end_s = std::max(t0, runs[static_cast<size_t>(run)].end_s);
  free_runs.push_back(run);
  return end_s;
}

// The reference (shortcut off): every flow a SimGrid flow from its route's latency on.
double FlowRunner::State::run_in_simgrid(const Flow* flows, const std::vector<Route*>& flow_routes,
                                         const std::vector<size_t>& order, int64_t tag)
{
  const double t0 = sg4::Engine::get_clock();
  std::deque<SimgridFlow> mine;
  double end_s = t0;
  size_t next = 0;
  for (;;) {
    const double now_s = sg4::Engine::get_clock();
    for (; next < order.size() && t0 + flow_routes[order[next]]->latency_s <= now_s; ++next) {
      const size_t i = order[next];
      const size_t logged = log_start(flows[i], now_s, tag);
      mine.push_back(SimgridFlow{send(*flow_routes[i], static_cast<uint64_t>(wire_bytes(flows[i].bytes))), logged});
      ++stats.simgrid_flows;
    }
    const double wake_s = next < order.size() ? t0 + flow_routes[order[next]]->latency_s : kNever;
    if (mine.empty()) {
      if (wake_s == kNever)
        break;
      sg4::this_actor::sleep_until(wake_s);
      continue;
    }
    // Wait for the SimGrid flows in order (each observed once: linear in their number), but no longer than the
    // next start of this run.
    SimgridFlow& f = mine.front();
    if (wake_s == kNever)
      f.comm->wait();
    else if (sg4::Comm::wait_any_for({f.comm}, wake_s - now_s) < 0)
      continue;
    end_s = std::max(end_s, f.comm->get_finish_time());
    log_end(f.log_index, f.comm->get_finish_time());
    mine.pop_front();
  }
  return end_s;
}

// Runs flows[0, count) from now and returns when the last has arrived, with its arrival time.
double FlowRunner::State::run_flows(const Flow* flows, size_t count, int64_t tag)
{
  std::vector<Route*> flow_routes;
  flow_routes.reserve(count);
  for (size_t i = 0; i < count; ++i)
    flow_routes.push_back(&route(flows[i].src_gpu, flows[i].dst_gpu));
  // Transfers start after their route's latency: in that order.
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return flow_routes[a]->latency_s < flow_routes[b]->latency_s; });
  return shortcut ? run_in_network(flows, flow_routes, order, tag) : run_in_simgrid(flows, flow_routes, order, tag);
}

} // namespace gputwin::sim
