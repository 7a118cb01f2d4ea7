#pragma once
// A transfer alone on the network: the NCCL bandwidth of a link, what a communication op's flows put on each
// directed link, and the time they take when no other traffic meets them. Both executors time communication with
// these: the SimGrid executor a collective that may run alone (lone_flows_duration_s: each flow alone on its
// route, exactly what SimGrid computes for flows that share no link) and the flows of its flow log timed that way
// (LoneRoute), the DAG executor every transfer before link sharing (link_load: per link, its flows' bytes
// together). The two times agree when each link carries one flow and the slowest flow also has the longest route
// latency (a ring inside a node); otherwise the DAG's is the busiest link's time plus the longest route latency,
// the SimGrid one the slowest flow's latency plus its own transfer. Plain C++, no SimGrid.

#include "gputwin/sim/comm_source.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <algorithm>
#include <set>
#include <vector>

namespace gputwin::sim {

// The effective bandwidth of a directed link: line rate x the NCCL efficiency of its kind (cluster `nccl:`).
double nccl_link_bytes_per_s(const topo::ClusterSpec& spec, const topo::Link& link);

// A route with nothing else on it: its latency (the sum of its links') and its slowest link's NCCL bandwidth.
struct LoneRoute {
  double latency_s = 0;
  double bytes_per_s = 1e300; // no link: unlimited
  // When the first byte of a flow started at `start_s` arrives.
  double first_byte_s(double start_s) const { return start_s + latency_s; }
  // When a flow of `bytes` started at `start_s` has arrived whole.
  double end_s(double start_s, double bytes) const { return start_s + latency_s + bytes / bytes_per_s; }
  // Seconds a flow of `bytes` takes from its start.
  double seconds(double bytes) const { return latency_s + bytes / bytes_per_s; }
};

LoneRoute lone_route(const topo::ClusterGraph& graph, const std::vector<int>& route);

// Seconds `work` takes with each of its flows alone on its route: the slowest flow's route latency + bytes over its
// slowest link, then work.latency_s. -1 when two of its flows share a link, or `shared(link)` holds for a link of
// one (other traffic may meet them there): the work must then run as flows.
template <class Shared>
double lone_flows_duration_s(const topo::ClusterGraph& graph, const CommWork& work, Shared&& shared)
{
  double duration_s = 0;
  std::set<int> used;
  for (const Flow& f : work.flows) {
    const std::vector<int> route = graph.route(f.src_gpu, f.dst_gpu);
    for (const int link : route)
      if (shared(link) || !used.insert(link).second)
        return -1;
    duration_s = std::max(duration_s, lone_route(graph, route).seconds(f.bytes));
  }
  return duration_s + work.latency_s;
}

// What a communication op puts on one directed link, alone on the network.
struct LoadOnLink {
  int link = 0;
  double bytes = 0; // its flows' bytes on the link
  int flows = 0;
  double active_s = 0; // the link carries them from the op's start until then: the slowest of its flows through
                       // the link, each flow as slow as the busiest link of its route (flows through less busy
                       // links finish early and leave the link free)
};

// A communication op's load on the links and its contention-free timing; contention_free_duration_s is
// duration_s().
struct LinkLoad {
  std::vector<LoadOnLink> links; // sorted by link
  double busiest_s = 0;          // the busiest link's bytes over its NCCL bandwidth
  double route_latency_s = 0;    // the longest route's latency
  double latency_s = 0;          // NCCL's latency, paid after the flows
  double duration_s() const { return busiest_s + route_latency_s + latency_s; }
};

// `work`'s flows on `graph`, each link with the sum of the bytes its flows put there.
LinkLoad link_load(const topo::ClusterGraph& graph, const CommWork& work);

// Seconds a communication op's flows take alone on `graph`: for every link the sum of its flows' bytes over
// the link's NCCL bandwidth, the busiest link's time, plus the longest route latency and `work.latency_s`.
double contention_free_duration_s(const topo::ClusterGraph& graph, const CommWork& work);

} // namespace gputwin::sim
