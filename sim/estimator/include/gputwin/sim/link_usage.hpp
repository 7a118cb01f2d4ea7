#pragma once
// What the flows of a run did to each directed link of the cluster graph: the bytes and flows that crossed it and
// how long at least one flow was on it (the length of the union of their transfer intervals), over the whole run
// or within a time window. The link report (link_report.hpp) is built on it; unlike a flow log it is small and
// adds up: a steady-state run's usage is its sample's plus whole periods of one period's (steady_link_usage.hpp).
// Plain C++.

#include "gputwin/sim/flow_log.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <cstdint>
#include <istream>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

namespace gputwin::sim {

struct LinkTraffic {
  int link = 0;      // directed link id of the graph
  double bytes = 0;  // bytes of the flows that crossed it
  int64_t flows = 0; // flows that crossed it
  double busy_s = 0; // length of the union of the flows' transfer intervals on it
};

struct LinkUsage {
  int64_t flows = 0;             // flows counted
  double flow_bytes = 0;         // their bytes
  double inter_domain_bytes = 0; // ... between GPUs of different NVLink domains (ClusterSpec::same_nvlink_domain)
  std::vector<LinkTraffic> links; // every link some flow crossed, by link id
};

// The usage of `log`'s flows. With a window [from_s, to_s): the flows (bytes, counts) that start in it, and each
// link's busy time inside it -- what one period of a repeating run adds. REQUIRES: the log's GPUs are `graph`'s.
LinkUsage link_usage(const topo::ClusterGraph& graph, const FlowLog& log,
                     double from_s = -std::numeric_limits<double>::infinity(),
                     double to_s = std::numeric_limits<double>::infinity());

// `usage` + `times` x `more`, link by link (a steady-state run: the sample's plus `times` periods).
LinkUsage add_usage(const LinkUsage& usage, const LinkUsage& more, double times);

// A usage as text and back, exactly (hex floats): a steady-state sample's, from the process that ran it.
std::string to_text(const LinkUsage& usage);
LinkUsage link_usage_from_text(std::istream& in); // throws std::logic_error on text to_text did not write

// The log's flow indices by start time, ties in log order (a stable sort). The log is nearly in that order already
// (flows are logged as their transfers start, bar those timed in closed form), so an already-sorted log costs one
// pass; otherwise (start, index) pairs are sorted directly, not indices through the log.
std::vector<size_t> flows_by_start(const FlowLog& log);

// Routes by GPU pair, each computed once (ClusterGraph::route, the routing the executor used).
class RouteCache {
public:
  explicit RouteCache(const topo::ClusterGraph& graph) : graph_(graph) {}
  const std::vector<int>& operator()(int src, int dst);

private:
  const topo::ClusterGraph& graph_;
  std::unordered_map<uint64_t, std::vector<int>> routes_;
};

} // namespace gputwin::sim
