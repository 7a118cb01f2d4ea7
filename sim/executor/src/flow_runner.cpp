#include "gputwin/sim/flow_runner.hpp"

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

struct Route {
  std::vector<int> links; // directed link ids
  double latency_s = 0;   // sum of the links' latencies, paid before the transfer
  double bytes_per_s = 0; // the slowest link: the rate of the flow when it is alone
  sg4::Host* src = nullptr;
  sg4::Host* dst = nullptr;
};

struct FastFlow {
  const Route* route = nullptr;
  double bytes = 0;   // bytes of the whole transfer
  double start_s = 0; // when the transfer started (after the route latency)
  double end_s = 0;   // start_s + bytes / route->bytes_per_s
  bool converted = false;
  sg4::CommPtr remainder; // when converted: the SimGrid flow of what was left
};

// SimGrid moves whole bytes; a fast flow moves as many as its SimGrid twin would.
double wire_bytes(double bytes)
{
  return std::ceil(std::max(bytes, 0.0));
}

} // namespace

struct FlowRunner::State {
  State(const SimgridPlatform& p, const topo::ClusterGraph& g)
      : platform(p), graph(g), fast_on_link(g.links().size(), -1), simgrid_on_link(g.links().size(), 0)
  {
  }

  const Route& route(int src_gpu, int dst_gpu)
  {
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(src_gpu)) << 32) | static_cast<uint32_t>(dst_gpu);
    auto found = routes.find(key);
    if (found != routes.end())
      return found->second;
    Route r;
    r.links = graph.route(src_gpu, dst_gpu);
    r.latency_s = platform.route_latency_s(src_gpu, dst_gpu); // throws when the platform has no such route
    r.bytes_per_s = kNever;
    for (const int id : r.links)
      r.bytes_per_s = std::min(r.bytes_per_s,
                               SimgridPlatform::effective_bytes_per_s(graph.spec(), graph.links()[static_cast<size_t>(id)]));
    std::tie(r.src, r.dst) = platform.transfer_endpoints(src_gpu, dst_gpu);
    return routes.emplace(key, std::move(r)).first->second;
  }

  // The fast flow holding `link` whose transfer has not ended by `now_s`, or -1.
  int32_t live_holder(int link, double now_s)
  {
    int32_t& holder = fast_on_link[static_cast<size_t>(link)];
    if (holder >= 0 && fast[static_cast<size_t>(holder)].end_s <= now_s)
      holder = -1; // ended; its owner frees the slot when it wakes
    return holder;
  }

  // The fast flow `id` shares its links from now on: the ledger moves it to the SimGrid side, and the bytes it
  // has not moved yet are returned, to become a SimGrid flow (start_remainders).
  uint64_t convert(int32_t id, double now_s)
  {
    FastFlow& f = fast[static_cast<size_t>(id)];
    const double moved = f.route->bytes_per_s * (now_s - f.start_s);
    for (const int link : f.route->links) {
      if (fast_on_link[static_cast<size_t>(link)] == id)
        fast_on_link[static_cast<size_t>(link)] = -1;
      ++simgrid_on_link[static_cast<size_t>(link)];
    }
    f.converted = true; // its owner waits for `remainder` (set below, at the same simulated time)
    ++stats.converted_flows;
    return static_cast<uint64_t>(wire_bytes(f.bytes - moved));
  }

  // Starts the SimGrid flows of converted fast flows. Every SimGrid call lets other actors run, so the ledger is
  // brought up to date before any is made, and fast flows are found again by id afterwards (the vector may grow).
  void start_remainders(const std::vector<std::pair<int32_t, uint64_t>>& remainders)
  {
    for (const auto& [id, bytes] : remainders) {
      const Route* r = fast[static_cast<size_t>(id)].route;
      sg4::CommPtr comm = sg4::Comm::sendto_async(r->src, r->dst, bytes);
      fast[static_cast<size_t>(id)].remainder = comm;
      // The remainder belongs to the calling actor, and SimGrid cancels an actor's activities when it ends: the
      // caller must outlive it (settle()).
      created_by[sg4::this_actor::get_pid()].push_back(std::move(comm));
    }
  }

  // Starts the transfer of `bytes` on `r` now. Returns the fast flow's id, or -1 with `comm` set.
  int32_t start_transfer(const Route& r, double bytes, double now_s, sg4::CommPtr& comm)
  {
    std::vector<std::pair<int32_t, uint64_t>> remainders;
    int32_t id = -1;
    if (shortcut) {
      bool free = true;
      for (const int link : r.links) {
        const int32_t holder = live_holder(link, now_s);
        if (holder >= 0)
          remainders.emplace_back(holder, convert(holder, now_s));
        free = free && simgrid_on_link[static_cast<size_t>(link)] == 0 && fast_on_link[static_cast<size_t>(link)] < 0;
      }
      if (free) {
        if (free_slots.empty()) {
          id = static_cast<int32_t>(fast.size());
          fast.emplace_back();
        } else {
          id = free_slots.back();
          free_slots.pop_back();
        }
        FastFlow& f = fast[static_cast<size_t>(id)];
        f = FastFlow{};
        f.route = &r;
        f.bytes = wire_bytes(bytes);
        f.start_s = now_s;
        f.end_s = now_s + f.bytes / r.bytes_per_s;
        for (const int link : r.links)
          fast_on_link[static_cast<size_t>(link)] = id;
        ++stats.fast_flows;
      }
    }
    if (id < 0) {
      for (const int link : r.links)
        ++simgrid_on_link[static_cast<size_t>(link)];
      ++stats.simgrid_flows;
    }
    start_remainders(remainders);
    if (id < 0)
      comm = sg4::Comm::sendto_async(r.src, r.dst, static_cast<uint64_t>(wire_bytes(bytes)));
    return id;
  }

  void free_fast(int32_t id)
  {
    FastFlow& f = fast[static_cast<size_t>(id)];
    if (!f.converted)
      for (const int link : f.route->links)
        if (fast_on_link[static_cast<size_t>(link)] == id)
          fast_on_link[static_cast<size_t>(link)] = -1;
    f.remainder = nullptr;
    free_slots.push_back(id);
  }

  double run_flows(const Flow* flows, size_t count);

  void release_simgrid(const Route& r)
  {
    for (const int link : r.links)
      --simgrid_on_link[static_cast<size_t>(link)];
  }

  const SimgridPlatform& platform;
  const topo::ClusterGraph& graph;
  std::unordered_map<uint64_t, Route> routes; // node-based: references stay valid
  std::vector<int32_t> fast_on_link;          // per directed link: the fast flow holding it, or -1
  std::vector<int32_t> simgrid_on_link;       // per directed link: SimGrid flows on it
  std::vector<FastFlow> fast;                 // slots, reused through free_slots
  std::vector<int32_t> free_slots;
  std::unordered_map<aid_t, std::vector<sg4::CommPtr>> created_by; // remainders started on behalf of others
  FlowRunnerStats stats;
  bool shortcut = true;
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

void FlowRunner::run(const std::vector<Flow>& flows, double latency_s)
{
  const double end_s = std::max(sg4::Engine::get_clock(), state_->run_flows(flows.data(), flows.size()));
  sg4::this_actor::sleep_until(end_s + latency_s);
}

// Runs flows[0, count) from now and returns when the last has arrived, with its arrival time.
double FlowRunner::State::run_flows(const Flow* flows, size_t count)
{
  State& s = *this;
  const double t0 = sg4::Engine::get_clock();
  std::vector<const Route*> routes;
  routes.reserve(count);
  for (size_t i = 0; i < count; ++i)
    routes.push_back(&s.route(flows[i].src_gpu, flows[i].dst_gpu));
  // Transfers start after their route's latency: in that order.
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return routes[a]->latency_s < routes[b]->latency_s; });

  std::vector<int32_t> mine_fast;
  std::deque<std::pair<sg4::CommPtr, const Route*>> mine_comms;
  double end_s = t0;
  size_t next = 0;
  for (;;) {
    const double now_s = sg4::Engine::get_clock();
    for (; next < order.size() && t0 + routes[order[next]]->latency_s <= now_s; ++next) {
      const size_t i = order[next];
      sg4::CommPtr comm;
      const int32_t id = s.start_transfer(*routes[i], flows[i].bytes, now_s, comm);
      if (id >= 0)
        mine_fast.push_back(id);
      else
        mine_comms.emplace_back(std::move(comm), routes[i]);
    }
    double wake_s = next < order.size() ? t0 + routes[order[next]]->latency_s : kNever;
    for (size_t k = 0; k < mine_fast.size();) {
      const int32_t id = mine_fast[k];
      FastFlow& f = s.fast[static_cast<size_t>(id)];
      if (f.converted && f.remainder) {
        mine_comms.emplace_back(f.remainder, f.route);
      } else if (f.converted) {
        wake_s = std::min(wake_s, f.end_s); // its remainder starts now, from the converting actor: look again later
        ++k;
        continue;
      } else if (f.end_s <= now_s) {
        end_s = std::max(end_s, f.end_s);
      } else {
        wake_s = std::min(wake_s, f.end_s);
        ++k;
        continue;
      }
      s.free_fast(id);
      mine_fast[k] = mine_fast.back();
      mine_fast.pop_back();
    }
    if (mine_comms.empty()) {
      if (wake_s == kNever)
        break;
      sg4::this_actor::sleep_until(wake_s);
      continue;
    }
    // Wait for the SimGrid flows in order (each observed once: linear in their number), but no longer than the
    // next event of this run. A flow that ended while an earlier one was awaited is released late: its links
    // then refuse the shortcut a little longer, which costs speed, never exactness.
    auto& [comm, r] = mine_comms.front();
    if (wake_s == kNever)
      comm->wait();
    else if (sg4::Comm::wait_any_for({comm}, wake_s - now_s) < 0)
      continue;
    end_s = std::max(end_s, comm->get_finish_time());
    s.release_simgrid(*r);
    mine_comms.pop_front();
  }
  return end_s;
}

} // namespace gputwin::sim
