#include "gputwin/sim/simgrid_platform.hpp"

#include "gputwin/common/interrupt.hpp"
#include "gputwin/sim/dag_executor.hpp"

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace sg4 = simgrid::s4u;

namespace gputwin::sim {

namespace {

bool platform_built = false;

// The SimGrid engine of this process, created on first use with the network model settings above.
sg4::Engine& simgrid_engine()
{
  if (sg4::Engine::is_initialized())
    return *sg4::Engine::get_instance();
  static std::vector<std::string> args = {"gputwin", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                                          "--cfg=network/TCP-gamma:0", "--log=root.thres:critical"};
  static std::vector<char*> argv;
  for (std::string& a : args)
    argv.push_back(a.data());
  static int argc = static_cast<int>(argv.size());
  static sg4::Engine engine(&argc, argv.data());
  restore_interrupt_handler(); // SimGrid's own SIGINT handler exits 1 without a word
  return engine;
}

} // namespace

double SimgridPlatform::effective_bytes_per_s(const topo::ClusterSpec& spec, const topo::Link& link)
{
  return nccl_link_bytes_per_s(spec, link);
}

SimgridPlatform::SimgridPlatform(const topo::ClusterGraph& graph, const std::vector<std::pair<int, int>>& gpu_pairs)
{
  if (platform_built)
    throw std::logic_error("SimGrid 3.32 allows one platform per process; this process already built one");
  platform_built = true;
  simgrid_engine();

  // A star zone: a host's route to the sink is its "up" links. Every GPU pair that talks gets a transfer host whose
  // up links are the pair's route, so memory grows with the pairs, not with the square of the GPUs (a full zone
  // over 16,384 GPUs would hold a 268-million-entry route table). GPU hosts only place actors.
  const topo::ClusterSpec& spec = graph.spec();
  sg4::NetZone* zone = sg4::create_star_zone(spec.name);
  hosts_.resize(static_cast<size_t>(graph.gpu_count()));
  if (spec.host_cores > 0) {
    // One host per node, its cores shared by the node's rank threads (header). Work is counted at the nominal
    // peak, so that SimGrid's work-amount precision stays far below an op's work.
    shared_cores_ = spec.host_cores;
    core_flops_ = spec.gpu.peak_bf16_flops;
    std::vector<sg4::Host*> nodes;
    for (int g = 0; g < graph.gpu_count(); ++g) {
      const size_t node = static_cast<size_t>(g / spec.gpus_per_node);
      if (node == nodes.size())
        nodes.push_back(
            zone->create_host("node" + std::to_string(node), core_flops_)->set_core_count(shared_cores_)->seal());
      hosts_[static_cast<size_t>(g)] = nodes[node];
    }
  } else {
    for (int g = 0; g < graph.gpu_count(); ++g)
      hosts_[static_cast<size_t>(g)] = zone->create_host("gpu" + std::to_string(g), spec.gpu.peak_bf16_flops)->seal();
  }
  sink_ = zone->create_host("sink", 1)->seal();
  zone->add_route(nullptr, sink_->get_netpoint(), nullptr, nullptr, {}, /*symmetrical=*/false);

  // Links: created on first use by a route, one per directed graph link.
  std::vector<sg4::Link*> links(graph.links().size(), nullptr);
  auto link = [&](int id) {
    sg4::Link*& l = links[static_cast<size_t>(id)];
    if (l == nullptr) {
      const topo::Link& g = graph.links()[static_cast<size_t>(id)];
      // No latency in SimGrid: the flow runner pays each route's latency before the transfer (flow_runner.hpp).
      l = zone->create_link(g.name, effective_bytes_per_s(spec, g))->seal();
      ++link_count_;
    }
    return l;
  };

  std::vector<std::pair<int, int>> pairs = gpu_pairs;
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  routes_.reserve(pairs.size());
  for (const auto& [src, dst] : pairs) {
    if (src == dst)
      throw std::invalid_argument("SimgridPlatform: a route from GPU " + std::to_string(src) + " to itself");
    std::vector<sg4::LinkInRoute> route;
    const std::vector<int> path = graph.route(src, dst);
    for (const int id : path)
      route.emplace_back(link(id));
    const double latency_s = graph.path_latency_s(path);
    sg4::Host* from = zone->create_host("route" + std::to_string(routes_.size()), 1)->seal();
    zone->add_route(from->get_netpoint(), nullptr, nullptr, nullptr, route, /*symmetrical=*/false);
    routes_.push_back(RouteEntry{{src, dst}, latency_s, from});
  }
  zone->seal();
}

SimgridPlatform::~SimgridPlatform() = default;

sg4::Engine& SimgridPlatform::engine() const
{
  return simgrid_engine();
}

sg4::Host* SimgridPlatform::host(int gpu) const
{
  return hosts_.at(static_cast<size_t>(gpu));
}

void SimgridPlatform::compute_on_cores(int gpu, double seconds_alone, int threads) const
{
  if (!shares_cores() || threads < 1 || !(seconds_alone >= 0))
    throw std::logic_error("SimgridPlatform::compute_on_cores: needs a shared host, threads >= 1, seconds >= 0");
  if (seconds_alone == 0)
    return;
  // One execution of `threads` threads, each of this work: SimGrid's CPU model gives each thread at most one core
  // and counts all of them against the host's cores (n threads at rate v use n v of its capacity).
  sg4::this_actor::thread_execute(host(gpu), seconds_alone * core_flops_, threads);
}

const SimgridPlatform::RouteEntry& SimgridPlatform::route_entry(int src_gpu, int dst_gpu) const
{
  const std::pair<int, int> key{src_gpu, dst_gpu};
  const auto it = std::lower_bound(routes_.begin(), routes_.end(), key,
                                   [](const RouteEntry& entry, const auto& k) { return entry.pair < k; });
  if (it == routes_.end() || it->pair != key)
    throw std::logic_error("SimgridPlatform: no route from GPU " + std::to_string(src_gpu) + " to " +
                           std::to_string(dst_gpu));
  return *it;
}

double SimgridPlatform::route_latency_s(int src_gpu, int dst_gpu) const
{
  return route_entry(src_gpu, dst_gpu).latency_s;
}

std::pair<sg4::Host*, sg4::Host*> SimgridPlatform::transfer_endpoints(int src_gpu, int dst_gpu) const
{
  return {route_entry(src_gpu, dst_gpu).from, sink_};
}

} // namespace gputwin::sim
