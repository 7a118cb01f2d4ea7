#pragma once
// Where the network time goes: per directed link of the cluster graph, the bytes its flows carried and the
// fraction of a window in which at least one flow crossed it, per kind of link, and the exposed communication of a
// stage attributed to the links that limited it. Built from a flow log (flow_log.hpp) and ClusterGraph::route(),
// the routing the executor used. Plain C++ (sim/README.md, "Link report").

#include "gputwin/sim/flow_log.hpp"
#include "gputwin/sim/iteration_result.hpp"
#include "gputwin/sim/link_usage.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gputwin::sim {

// What a directed link is, from the GPU's side: a GPU's NVLink into the NVSwitch and the NVSwitch port out to a
// GPU; PCIe (GPU <-> PCIe switch <-> NIC, both directions); a NIC sending into its leaf (nic_tx) and the leaf port
// sending to a NIC (nic_rx); leaf <-> spine (or aggregation switch) and spine <-> core, both directions.
enum class LinkClass { Nvlink, NvswitchPort, Pcie, NicTx, NicRx, LeafSpine, SpineCore };
inline constexpr int link_class_count = 7;

// "nvlink", "nvswitch_port", "pcie", "nic_tx", "nic_rx", "leaf_spine", "spine_core".
const char* to_string(LinkClass kind);
LinkClass link_class(const topo::ClusterGraph& graph, int link);

struct LinkUse {
  int link = 0;              // directed link id of the graph
  double bytes = 0;          // bytes of the flows that crossed it
  int64_t flows = 0;         // flows that crossed it
  double busy_s = 0;         // length of the union of the flows' transfer intervals on it
  double busy_fraction = 0;  // busy_s / window
  double utilisation = 0;    // bytes / (effective bandwidth x window): the mean fraction of its bandwidth used
};

struct LinkClassTotal {
  LinkClass kind = LinkClass::Nvlink;
  int64_t links = 0;             // links of this kind in the graph
  int64_t used = 0;              // ... that some flow crossed
  double bytes = 0;              // bytes over all of them
  double mean_busy_fraction = 0; // mean busy fraction of the used ones
  double max_busy_fraction = 0;
};

// A stage's exposed communication split between the links that limited it (attribute_exposed).
struct ExposedAttribution {
  double exposed_s = 0;     // the spans' total (StageTimes::exposed_comm_s)
  double unattributed_s = 0; // outside the transfer window of the op's flows: route and NCCL latency, peers late
  std::vector<std::pair<int, double>> links;           // (link, seconds), most first
  std::vector<std::pair<LinkClass, double>> kinds;     // (kind, seconds), most first; only kinds with time
};

struct LinkReport {
  double window_s = 0;          // the span busy fractions are taken over (the iteration)
  int64_t flows = 0;            // flows in the log
  double flow_bytes = 0;        // their bytes
  // Bytes of the flows between GPUs of different NVLink domains (ClusterSpec::same_nvlink_domain): the node on a
  // DGX, the rack of 18 trays on an NVL72, where flows between trays of one rack stay on NVLink. JSON key
  // `inter_node_bytes` (the name it had when the domain was always the node).
  double inter_domain_bytes = 0;
  std::vector<LinkUse> links;   // every link some flow crossed, by link id
  std::vector<LinkClassTotal> kinds; // every kind the graph has links of, in enum order
  std::optional<LinkClass> busiest_kind; // the used kind with the highest mean busy fraction
  std::optional<ExposedAttribution> exposed;
};

// The link report of `log` over [0, window_s]. REQUIRES: window_s > 0; the log's GPUs are `graph`'s.
LinkReport link_report(const topo::ClusterGraph& graph, const FlowLog& log, double window_s);
// The same from the log's usage (link_usage.hpp): a steady-state run's, extrapolated from its sample.
LinkReport link_report(const topo::ClusterGraph& graph, const LinkUsage& usage, double window_s);

// Attributes the exposed communication of program `program` (its spans, StageTimes::exposed_spans) to links.
// Each span is held by a communication op; the flows of that op (log tags, matched across programs by
// collective group and sequence or by message) moved in a transfer window W. The part of the span inside W goes
// to the op's limiting link: of the links its flows cross, the one most loaded during W -- bytes every flow moved
// on it during W (each flow at its average rate) over its effective bandwidth x |W|; ties share equally. The rest
// (latency, a late peer) is unattributed.
ExposedAttribution attribute_exposed(const topo::ClusterGraph& graph, const FlowLog& log,
                                     const std::vector<traces::RankProgram>& programs, size_t program,
                                     const std::vector<ExposedSpan>& spans);

// The `count` links with the longest busy time (then most bytes, then lowest id), busiest first.
std::vector<const LinkUse*> busiest_links(const LinkReport& report, size_t count);

// The utilisation of `link` over time as steps (time, value from then on): each flow crossing it contributes its
// average rate (bytes / transfer time) over its transfer, divided by the link's effective bandwidth. Ends at 0.
std::vector<std::pair<double, double>> link_utilisation_steps(const topo::ClusterGraph& graph, const FlowLog& log,
                                                              int link);

} // namespace gputwin::sim
