#pragma once
// The one place where the cluster graph becomes a SimGrid platform.
//
// Network model, chosen deliberately (see sim/README.md): CM02 with cross-traffic and the TCP-gamma window
// limit off, so a flow alone on its route takes exactly latency + bytes / bandwidth and concurrent flows
// share each link max-min fairly. The links carry no latency in SimGrid: the flow runner (flow_runner.hpp)
// waits each route's latency itself before the transfer starts, which is what CM02 does too, except that CM02
// would then weight each flow's share by its route latency (TCP's RTT unfairness); here every flow on a link
// weighs the same. SimGrid's default LV08 corrections (bandwidth x 0.97, latency x 13.01,
// reverse-path cross-traffic, TCP window cap) model TCP over Ethernet, not NCCL over NVLink and InfiniBand
// RDMA; the protocol overhead NCCL really pays is put in instead as each link kind's measured NCCL
// efficiency (cluster YAML `nccl:`), and its software latency by the NCCL tuner's latency model.
//
// Every directed graph link a route uses becomes one SimGrid link of bandwidth = line rate x NCCL efficiency
// of its kind, so both directions of a cable are independent (full duplex); every GPU pair that talks gets
// the route ClusterGraph::route() computes, so SimGrid and the graph cannot disagree. (SimGrid's zone is a
// star: one transfer host per talking pair, whose links to a common sink are the pair's route.) SimGrid 3.32 allows one
// platform per process: constructing a second SimgridPlatform throws std::logic_error.
//
// Shared hosts: when the cluster's `host_cores` C > 0 (localhost), a node's GPUs are threads of one process on C
// CPU cores: they all live on one SimGrid host with C cores, and a compute op is an execution there. SimGrid's CPU
// model shares the host max-min fairly with each execution bounded by one core per thread, so n threads computing at
// once each progress at min(1, C / n) of their speed alone -- a time-sliced scheduler seen as a fluid.

#include "gputwin/topologies/cluster_graph.hpp"

#include <memory>
#include <utility>
#include <vector>

namespace simgrid::s4u {
class Host;
class Engine;
} // namespace simgrid::s4u

namespace gputwin::sim {

class SimgridPlatform {
public:
  // A platform with a host per GPU of `graph` (speed = the GPU's bf16 peak) and routes for `gpu_pairs`
  // (ordered, src != dst).
  SimgridPlatform(const topo::ClusterGraph& graph, const std::vector<std::pair<int, int>>& gpu_pairs);
  ~SimgridPlatform();
  SimgridPlatform(const SimgridPlatform&) = delete;
  SimgridPlatform& operator=(const SimgridPlatform&) = delete;

  simgrid::s4u::Engine& engine() const;
  // Where the actors of GPU `gpu` run (GPU hosts do not communicate themselves); on a shared host, its node's.
  simgrid::s4u::Host* host(int gpu) const;
  // Whether the GPUs of a node are threads sharing its CPU cores (ClusterSpec::host_cores > 0).
  bool shares_cores() const { return shared_cores_ > 0; }
  // Runs, from the calling actor, `threads` identical threads of `seconds_alone` each (the time one takes with a
  // core to itself) on the host of GPU `gpu`, and returns when they are done: slower while more threads than
  // cores compute on that host. REQUIRES: shares_cores(), seconds_alone >= 0, threads >= 1.
  void compute_on_cores(int gpu, double seconds_alone, int threads) const;
  // The hosts a SimGrid communication from `src_gpu` to `dst_gpu` goes between: its route is exactly the
  // graph's route from src to dst. REQUIRES: the pair was given to the constructor.
  std::pair<simgrid::s4u::Host*, simgrid::s4u::Host*> transfer_endpoints(int src_gpu, int dst_gpu) const;
  // Sum of the graph's link latencies on the route src -> dst (paid by the flow runner, not by SimGrid).
  // REQUIRES: the pair was given to the constructor.
  double route_latency_s(int src_gpu, int dst_gpu) const;
  size_t link_count() const { return link_count_; }
  size_t route_count() const { return routes_.size(); }

  // Effective bandwidth SimGrid gives a directed link: line rate x NCCL efficiency of its kind.
  static double effective_bytes_per_s(const topo::ClusterSpec& spec, const topo::Link& link);

private:
  struct RouteEntry {
    std::pair<int, int> pair; // (src GPU, dst GPU)
    double latency_s = 0;
    simgrid::s4u::Host* from = nullptr; // the transfer host whose route to the sink is the pair's route
  };
  const RouteEntry& route_entry(int src_gpu, int dst_gpu) const;

  std::vector<simgrid::s4u::Host*> hosts_; // per GPU (on a shared host, its node's host)
  int shared_cores_ = 0;
  double core_flops_ = 0; // speed of one core of a shared host
  simgrid::s4u::Host* sink_ = nullptr;
  std::vector<RouteEntry> routes_; // sorted by pair
  size_t link_count_ = 0;
};

} // namespace gputwin::sim
