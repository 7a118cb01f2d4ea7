#include "gputwin/sim/collective_plan.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

namespace gputwin::sim {

namespace {

// Where a node's GPUs and NICs sit, as NCCL's topology detection sees them. NCCL's node is the NVLink domain: a
// domain of several nodes (trays; multi-node NVLink) is one node to its graph search, its rings and trees cross the
// network only between domains. A rail is one NIC of the domain, numbered node-major (node of the domain x NICs +
// NIC); when the domain is the node, the rail is the NIC.
class NodeLayout {
public:
  explicit NodeLayout(const topo::ClusterSpec& c) : c_(c) {}

  int node(int gpu) const { return c_.domain_of_gpu(gpu); }
  int tray(int gpu) const { return gpu / c_.gpus_per_node; } // the cluster node (tray) of the GPU
  int gpus_per_tray() const { return c_.gpus_per_node; }
  int local(int gpu) const { return gpu % c_.gpus_per_node; }
  int pcie_switch(int local_gpu) const
  {
    const int per_switch = c_.pcie.switches_per_node > 0 ? c_.gpus_per_node / c_.pcie.switches_per_node : 0;
    return per_switch > 0 ? local_gpu / per_switch : 0;
  }
  // The NIC serving local GPU `local_gpu` (its rail within the tray), or -1.
  int nic_of(int local_gpu) const
  {
    for (int n = 0; n < c_.nic.count; ++n)
      for (const int g : c_.nic.gpus[static_cast<size_t>(n)])
        if (g == local_gpu)
          return n;
    return -1;
  }
  // The rail of GPU `gpu` in its domain (the NIC serving it, on its tray), or -1.
  int rail_of(int gpu) const
  {
    const int nic = nic_of(local(gpu));
    return nic < 0 ? -1 : tray_in_domain(gpu) * c_.nic.count + nic;
  }
  int tray_in_domain(int gpu) const { return (gpu % c_.domain_gpus()) / c_.gpus_per_node; }
  int rails() const { return c_.nic.count * c_.nodes_per_domain(); }
  int rail_tray(int rail) const { return rail / c_.nic.count; } // the domain's node the rail's NIC is on
  int nic_switch(int rail) const { return pcie_switch(c_.nic.gpus[static_cast<size_t>(rail % c_.nic.count)].front()); }
  bool rail_failed(int domain, int rail) const
  {
    return c_.faults.nic_failed(domain * c_.nodes_per_domain() + rail_tray(rail), rail % c_.nic.count);
  }

private:
  const topo::ClusterSpec& c_;
};

// The communicator's GPUs grouped by node (nodes in order of first appearance, GPUs by local index).
std::vector<std::vector<int>> group_by_node(const NodeLayout& layout, const std::vector<int>& gpus)
{
  std::vector<std::vector<int>> groups;
  std::map<int, size_t> index;
  for (const int g : gpus) {
    const auto [it, inserted] = index.emplace(layout.node(g), groups.size());
    if (inserted)
      groups.emplace_back();
    groups[it->second].push_back(g);
  }
  for (auto& group : groups)
    std::sort(group.begin(), group.end());
  return groups;
}

// The rails (NIC indices) the communicator's channels use: NICs serving its GPUs on the first node. Inside one
// node the channels would all load every GPU's NVLink equally, so one ring stands for them.
std::vector<int> channel_rails(const NodeLayout& layout, const std::vector<std::vector<int>>& groups)
{
  if (groups.size() == 1)
    return {layout.rail_of(groups.front().front())};
  std::set<int> rails;
  for (const int g : groups.front()) {
    const int rail = layout.rail_of(g);
    if (rail >= 0)
      rails.insert(rail);
  }
  // A failed NIC (--fail-nic, --fail-link) takes its rail out of every communicator with a GPU on its node: NCCL's
  // rings run over the remaining rails; if none is left, each lost rail is replaced by the nearest NIC that works
  // on every node (on the same PCIe switch first, then by index).
  const auto failed_somewhere = [&](int rail) {
    return std::any_of(groups.begin(), groups.end(), [&](const std::vector<int>& group) {
      return layout.rail_failed(layout.node(group.front()), rail);
    });
  };
  const std::set<int> own = rails;
  std::erase_if(rails, failed_somewhere);
  if (rails.empty())
    for (const int lost : own)
      for (const bool same_switch : {true, false}) {
        const auto substitute = [&] {
          for (int k = 1; k < layout.rails(); ++k) {
            const int other = (lost + k) % layout.rails();
            if ((layout.nic_switch(other) == layout.nic_switch(lost)) == same_switch && !failed_somewhere(other))
              return other;
          }
          return -1;
        }();
        if (substitute >= 0) {
          rails.insert(substitute);
          break;
        }
      }
  if (rails.empty())
    return {-1}; // no NIC: one channel, inside the node
  return {rails.begin(), rails.end()};
}

// One node's (domain's) part of rail `rail`'s ring: enter at the GPU the rail's NIC serves, leave from a GPU on the
// same PCIe switch of the same tray as that NIC (so the data goes GPU -> PCIe -> NIC without crossing NVLink), the
// rest between.
std::vector<int> node_ring_segment(const NodeLayout& layout, const std::vector<int>& group, int rail)
{
  auto entry = group.begin();
  if (rail >= 0)
    entry = std::find_if(group.begin(), group.end(), [&](int g) { return layout.rail_of(g) == rail; });
  if (entry == group.end())
    entry = group.begin();
  const int entry_gpu = *entry;
  int exit_gpu = -1;
  if (group.size() > 1) {
    for (const int g : group)
      if (g != entry_gpu && rail >= 0 && layout.pcie_switch(layout.local(g)) == layout.nic_switch(rail) &&
          layout.tray_in_domain(g) == layout.rail_tray(rail)) {
        exit_gpu = g;
        break;
      }
    if (exit_gpu < 0)
      exit_gpu = group.back() != entry_gpu ? group.back() : group.front();
  }
  std::vector<int> segment{entry_gpu};
  for (const int g : group)
    if (g != entry_gpu && g != exit_gpu)
      segment.push_back(g);
  if (exit_gpu >= 0)
    segment.push_back(exit_gpu);
  return segment;
}

void check_gpus(const topo::ClusterSpec& cluster, const std::vector<int>& gpus)
{
  if (gpus.empty())
    throw std::invalid_argument("collective: no ranks");
  std::set<int> seen;
  for (const int g : gpus) {
    if (g < 0 || g >= cluster.gpus())
      throw std::invalid_argument("collective: GPU " + std::to_string(g) + " is not in the cluster");
    if (!seen.insert(g).second)
      throw std::invalid_argument("collective: GPU " + std::to_string(g) + " appears twice");
  }
}

} // namespace

std::vector<std::vector<int>> ring_orders(const topo::ClusterSpec& cluster, const std::vector<int>& gpus)
{
  check_gpus(cluster, gpus);
  const NodeLayout layout(cluster);
  const auto groups = group_by_node(layout, gpus);
  std::vector<std::vector<int>> rings;
  for (const int rail : channel_rails(layout, groups)) {
    std::vector<int> ring;
    for (const auto& group : groups) {
      const std::vector<int> segment = node_ring_segment(layout, group, rail);
      ring.insert(ring.end(), segment.begin(), segment.end());
    }
    rings.push_back(std::move(ring));
  }
  return rings;
}

namespace {

// NCCL's btree (src/graph/trees.cc ncclGetBtree): rank 0 is the root with one child, the highest power of two
// below n; every other rank's parent flips its lowest set bit up: xx01[0] -> xx10[0] (or xx00[0] when that is
// out of range), xx11[0] -> xx10[0].
int btree_parent(int n, int rank)
{
  if (rank == 0)
    return -1;
  int bit = 1;
  while (bit < n && !(bit & rank))
    bit <<= 1;
  const int up = (rank ^ bit) | (bit << 1);
  return up >= n ? (rank ^ bit) : up;
}

} // namespace

std::vector<std::vector<int>> double_binary_tree_parents(int n)
{
  // NCCL's double binary tree (ncclGetDtree): the btree, and for the second tree the btree mirrored (even n:
  // rank r at n-1-r) or shifted by one rank (odd n). The root has a single child, so an interior node sends to
  // its parent and two children and a node's NIC carries up to (3 + 1) / 2 shares at every n >= 4.
  std::vector<std::vector<int>> parents(2, std::vector<int>(static_cast<size_t>(std::max(n, 0)), -1));
  for (int i = 0; i < n; ++i) {
    parents[0][static_cast<size_t>(i)] = btree_parent(n, i);
    if (n % 2 == 0) {
      const int p = btree_parent(n, n - 1 - i);
      parents[1][static_cast<size_t>(i)] = p < 0 ? -1 : n - 1 - p;
    } else {
      const int p = btree_parent(n, (i - 1 + n) % n);
      parents[1][static_cast<size_t>(i)] = p < 0 ? -1 : (p + 1) % n;
    }
  }
  return parents;
}

double ring_bus_bytes_per_s(const topo::ClusterSpec& c, const std::vector<int>& gpus)
{
  check_gpus(c, gpus);
  const NodeLayout layout(c);
  const auto groups = group_by_node(layout, gpus);
  const double nvlink = c.nvlink.bytes_per_s * c.nccl.nvlink_efficiency;
  const double intra = nvlink > 0 ? nvlink : c.pcie.bytes_per_s * c.nccl.pcie_efficiency;
  if (groups.size() == 1)
    return intra;
  const std::vector<int> rails = channel_rails(layout, groups);
  const double net = static_cast<double>(rails.size()) * c.nic.bytes_per_s * c.nccl.net_efficiency;
  return std::min(intra, net);
}

namespace {

// NVLink SHARP as one communicator sees it: usable where the GPU generation has it (NCCL's nvlsEfficiency), the
// domain has NVSwitches, the cluster leaves NVLS on, and every domain holds at least two of its GPUs (NCCL turns
// NVLS off with one local GPU, transport/nvls.cc); heads from the smallest domain share.
struct NvlsShape {
  bool usable = false;
  double efficiency = 0;
  int heads = 0;
  int gpus_per_domain = 0; // the smallest number of the communicator's GPUs in one domain
  double intra_bus_bytes_per_s = 0;
  double net_bus_bytes_per_s = 0;
};

NvlsShape nvls_shape(const topo::ClusterSpec& cluster, const CollectivePlan& plan)
{
  NvlsShape shape;
  shape.efficiency = nccl_nvls_efficiency(cluster.gpu.generation);
  shape.gpus_per_domain = plan.domain_ranks;
  shape.heads = nvls_heads(shape.gpus_per_domain);
  shape.intra_bus_bytes_per_s = cluster.nvlink.bytes_per_s * cluster.nccl.nvlink_efficiency;
  shape.net_bus_bytes_per_s = static_cast<double>(plan.channels) * cluster.nic.bytes_per_s * cluster.nccl.net_efficiency;
  shape.usable = cluster.nccl.nvls && shape.efficiency > 0 && cluster.nvlink.switch_chips > 0 &&
                 shape.intra_bus_bytes_per_s > 0 && shape.gpus_per_domain >= 2;
  return shape;
}

// Bytes NVLS puts on each GPU's NVLink, each direction, for an all-reduce of `bytes` over `gpus` GPUs of one domain
// with `heads` NVLS channels: the time NCCL's NVLS bandwidth (nvls_bus_bytes_per_s) gives it, at the NVLink's own
// efficiency. With a head per GPU (up to 32) that is bytes x (n + 1) / n / efficiency: every GPU sends its whole
// buffer to the switches' reduction and its reduced share to their multicast, and receives the same.
double nvls_link_bytes(double bytes, int gpus, int heads, double efficiency)
{
  if (gpus < 2 || heads < 2 || !(efficiency > 0))
    return 0.0;
  return bytes * (heads + 1.0) * (gpus - 1.0) / (efficiency * (heads - 1.0) * gpus);
}

// What NCCL's tuner sees of the collective planned in `plan` (op, bytes, ranks, nodes set).
TunerInput tuner_input(const topo::ClusterSpec& cluster, const CollectivePlan& plan, double bus_bytes_per_s,
                       const CollectiveOptions& options)
{
  TunerInput in;
  in.op = plan.op;
  in.bytes = plan.bytes;
  in.ranks = plan.ranks;
  in.nodes = plan.nodes;
  in.intra_node_nvlink = cluster.nvlink.bytes_per_s > 0;
  in.ring_bus_bytes_per_s = bus_bytes_per_s;
  in.ampere = cluster.gpu.generation == GpuGeneration::Ampere;
  in.force_algorithm = options.algorithm;
  in.force_protocol = options.protocol;
  const NvlsShape nvls = nvls_shape(cluster, plan);
  in.nvls = nvls.usable;
  in.nvls_efficiency = nvls.efficiency;
  in.nvls_heads = nvls.heads;
  in.intra_bus_bytes_per_s = nvls.intra_bus_bytes_per_s;
  in.net_bus_bytes_per_s = nvls.net_bus_bytes_per_s;
  in.nvls_tree_max_bus_bytes_per_s =
      nvls_tree_max_bus_bytes_per_s(cluster.gpu.generation, plan.nodes, cluster.nic.bytes_per_s);
  in.collnet = cluster.nccl.collnet && cluster.nic.count > 0;
  in.nvswitch = cluster.nvlink.switch_chips > 0 && cluster.nvlink.bytes_per_s > 0;
  in.collnet_heads = plan.channels;
  return in;
}

// The input of the calibrated cost of NCCL's choice in `plan` (nccl_cost): with the time the payload of a
// reducing or gathering collective spends on the links, and the bytes one channel carries.
NcclCostInput nccl_cost_input(const topo::ClusterSpec& cluster, const CollectivePlan& plan, double bus_bytes_per_s)
{
  const CollectiveOp op = plan.op;
  const double bytes = plan.bytes;
  const double n = plan.ranks;
  const double channels = plan.channels;
  NcclCostInput cost_in;
  cost_in.op = op;
  cost_in.algorithm = plan.choice.algorithm;
  cost_in.protocol = plan.choice.protocol;
  cost_in.bytes = bytes;
  cost_in.ranks = plan.ranks;
  cost_in.nodes = plan.nodes;
  if (op == CollectiveOp::SendRecv || op == CollectiveOp::AllToAll || plan.ranks <= 1)
    return cost_in;
  if (in_network_reduction(plan.choice.algorithm)) {
    // The busiest NVLink carries nvls_link_bytes (NVLS), or, for CollNet, the scatter to the heads and the gather
    // back (direct) or every rail's chain share to both neighbours (chain): 2 (p - 1) / p of the buffer; across domains
    // each rail's NIC carries the tree's edges as for NCCL's tree (NVLS tree: one edge on two domains, (3 + 1) / 2
    // on more) or, reduced in the switches (SHARP), its share once each way.
    const NvlsShape nvls = nvls_shape(cluster, plan);
    const double p = nvls.gpus_per_domain;
    double intra_bytes = nvls_link_bytes(bytes, nvls.gpus_per_domain, nvls.heads, nvls.efficiency);
    if (plan.choice.algorithm == NcclAlgorithm::CollNetDirect || plan.choice.algorithm == NcclAlgorithm::CollNetChain)
      intra_bytes = p > 1 ? 2 * (p - 1) / p * bytes : 0.0;
    const double intra_s = intra_bytes / nvls.intra_bus_bytes_per_s;
    double inter_s = 0;
    if (plan.nodes > 1) {
      const double edges = plan.choice.algorithm != NcclAlgorithm::NvlsTree ? 1.0 : plan.nodes == 2 ? 1.0 : 2.0;
      inter_s = bytes * edges / nvls.net_bus_bytes_per_s;
    }
    cost_in.link_time_s = std::max(intra_s, inter_s);
    return cost_in;
  }
  if (plan.choice.algorithm == NcclAlgorithm::Tree) {
    // Per rail a node's root sends its share to its parent and two children in the tree where it is inner and
    // to its parent alone in the other (one edge each across two nodes): (3 + 1) / 2 edges on average. The
    // node's chain carries the share both ways over NVLink.
    const double edges = plan.nodes == 2 ? 1.0 : 2.0;
    const double nic = cluster.nic.bytes_per_s * cluster.nccl.net_efficiency;
    const double intra = cluster.nvlink.bytes_per_s > 0 ? cluster.nvlink.bytes_per_s * cluster.nccl.nvlink_efficiency
                                                        : cluster.pcie.bytes_per_s * cluster.nccl.pcie_efficiency;
    cost_in.link_time_s = bytes * std::max(edges / (channels * nic), 2.0 / intra);
    cost_in.channel_payload_bytes = bytes;
  } else {
    const double factor = op == CollectiveOp::AllReduce                                        ? 2.0 * (n - 1) / n
                          : op == CollectiveOp::AllGather || op == CollectiveOp::ReduceScatter ? (n - 1) / n
                                                                                               : 1.0;
    cost_in.link_time_s = factor * bytes / bus_bytes_per_s;
    cost_in.channel_payload_bytes = factor * bytes;
  }
  return cost_in;
}

// The flows of a collective being planned, each scaled by the protocol's wire factor (LL/LL128 move more bytes
// for the same data; slow channels stretch it). A flow from a GPU to itself or without bytes is left out.
class FlowList {
public:
  FlowList(std::vector<Flow>& flows, double wire_factor) : flows_(flows), wire_factor_(wire_factor) {}

  void add(int src, int dst, double flow_bytes, int steps) const
  {
    if (src != dst && flow_bytes > 0)
      flows_.push_back(Flow{src, dst, flow_bytes * wire_factor_, steps});
  }

private:
  std::vector<Flow>& flows_;
  double wire_factor_;
};

// Send/receive: the GPUs in pairs (0, 1), (2, 3), ..., each sending `bytes` to the other.
void add_send_recv_flows(const FlowList& flows, const std::vector<int>& gpus, double bytes)
{
  for (size_t r = 0; r + 1 < gpus.size(); r += 2) {
    flows.add(gpus[r], gpus[r + 1], bytes, 1);
    flows.add(gpus[r + 1], gpus[r], bytes, 1);
  }
}

// All-to-all: every GPU sends every other GPU its 1/n of `bytes`.
void add_all_to_all_flows(const FlowList& flows, const NodeLayout& layout, const std::vector<int>& gpus, double bytes,
                          const CollectiveOptions& options)
{
  const size_t n = gpus.size();
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j) {
      const double pair = all_to_all_pair_bytes(bytes, options.all_to_all, i, j, n);
      const int src = gpus[i], dst = gpus[j];
      if (!options.two_hop || layout.node(src) == layout.node(dst)) {
        flows.add(src, dst, pair, 1);
        continue;
      }
      // DeepEP: the relay is the GPU on the sender's rail in the receiver's node (tray) (dispatch: RDMA then
      // NVLink; combine: the reverse, NVLink to the relay on the receiver's rail in the sender's tray, then RDMA).
      const bool combine = options.all_to_all.at_sender;
      const int relay = combine ? layout.tray(src) * layout.gpus_per_tray() + layout.local(dst)
                                : layout.tray(dst) * layout.gpus_per_tray() + layout.local(src);
      if (combine) {
        flows.add(src, relay, pair, 1);
        flows.add(relay, dst, pair * options.internode_share, 1);
      } else {
        flows.add(src, relay, pair * options.internode_share, 1);
        flows.add(relay, dst, pair, 1);
      }
    }
}

// The edges of the double binary tree over nodes for every rail, rooted in each node at the GPU the rail enters
// through: both directions of every edge carry half the rail's `share` (one half per tree).
void add_tree_edges(const FlowList& flows, const NodeLayout& layout, const std::vector<std::vector<int>>& groups,
                    const std::vector<int>& rails, double share)
{
  const auto parents = double_binary_tree_parents(static_cast<int>(groups.size()));
  for (const int rail : rails) {
    std::vector<int> node_root;
    for (const auto& group : groups)
      node_root.push_back(node_ring_segment(layout, group, rail).front());
    for (const std::vector<int>& tree_parent : parents)
      for (size_t k = 0; k < node_root.size(); ++k) {
        const int parent = tree_parent[k];
        if (parent >= 0) {
          flows.add(node_root[k], node_root[static_cast<size_t>(parent)], share / 2, 1);
          flows.add(node_root[static_cast<size_t>(parent)], node_root[k], share / 2, 1);
        }
      }
  }
}

// Every rail's chain through each node, from the GPU the rail enters through: both directions of every link carry
// the rail's `share` (reduce towards the head, broadcast back).
void add_rail_chains(const FlowList& flows, const NodeLayout& layout, const std::vector<std::vector<int>>& groups,
                     const std::vector<int>& rails, double share)
{
  for (const int rail : rails)
    for (const auto& group : groups) {
      const std::vector<int> chain = node_ring_segment(layout, group, rail);
      for (size_t k = 1; k < chain.size(); ++k) {
        flows.add(chain[k], chain[k - 1], share, 1);
        flows.add(chain[k - 1], chain[k], share, 1);
      }
    }
}

// Every rail carries two of NCCL's channels, one on each tree of the double binary tree over nodes (NCCL doubles
// its channels and gives the two copies the two trees), each rooted in a node at the GPU the rail enters through,
// with the node's other GPUs chained behind it. A node is inner in one tree and a leaf in the other, so each NIC
// carries (3 + 1) / 2 shares on average rather than 3. Reduce up and broadcast down are pipelined, so both
// directions of every edge carry the channel's share at the same time.
void add_tree_flows(const FlowList& flows, const NodeLayout& layout, const std::vector<std::vector<int>>& groups,
                    const std::vector<int>& rails, double bytes, double channels)
{
  const double share = bytes / channels;
  add_rail_chains(flows, layout, groups, rails, share);
  add_tree_edges(flows, layout, groups, rails, share);
}

// A cycle over each domain's GPUs whose every hop carries `hop_bytes`: each GPU's NVLink to the switches carries
// that many bytes each way (a route inside a domain is the sender's link up and the receiver's link down).
void add_domain_cycles(const FlowList& flows, const std::vector<std::vector<int>>& groups, double hop_bytes)
{
  for (const auto& group : groups)
    if (group.size() > 1)
      for (size_t k = 0; k < group.size(); ++k)
        flows.add(group[k], group[(k + 1) % group.size()], hop_bytes, 1);
}

// A reduction in the InfiniBand switches (SHARP) across domains: every rail's head sends its share up once and
// receives the reduced share once, which a cycle over the domains' heads of each rail puts on every NIC.
void add_switch_reduction_edges(const FlowList& flows, const NodeLayout& layout,
                                const std::vector<std::vector<int>>& groups, const std::vector<int>& rails,
                                double share)
{
  for (const int rail : rails) {
    std::vector<int> heads;
    for (const auto& group : groups)
      heads.push_back(node_ring_segment(layout, group, rail).front());
    if (heads.size() > 1)
      for (size_t k = 0; k < heads.size(); ++k)
        flows.add(heads[k], heads[(k + 1) % heads.size()], share, 1);
  }
}

// NVLS inside each domain: a cycle over the domain's GPUs whose every hop carries `link_bytes`, which loads each
// GPU's NVLink to the switches with that many bytes each way (a route inside a domain is the sender's link up and
// the receiver's link down). NVLS tree adds NCCL's tree between the domains, each rail rooted at the GPU the rail
// enters through, carrying the rail's share.
void add_nvls_flows(const FlowList& flows, const NodeLayout& layout, const std::vector<std::vector<int>>& groups,
                    const std::vector<int>& rails, double bytes, double link_bytes, bool tree)
{
  add_domain_cycles(flows, groups, link_bytes);
  if (tree)
    add_tree_edges(flows, layout, groups, rails, bytes / static_cast<double>(rails.size()));
  else if (groups.size() > 1)
    add_switch_reduction_edges(flows, layout, groups, rails, bytes / static_cast<double>(rails.size()));
}

// CollNet: inside each domain the scatter to the NIC heads and the gather back (direct: a cycle whose hops carry
// 2 (p - 1) / p of the buffer, what each GPU sends and receives) or every rail's chain, both ways with the rail's
// share (chain); across domains the switches' reduction.
void add_collnet_flows(const FlowList& flows, const NodeLayout& layout, const std::vector<std::vector<int>>& groups,
                       const std::vector<int>& rails, double bytes, bool direct)
{
  const double share = bytes / static_cast<double>(rails.size());
  if (direct) {
    for (const auto& group : groups) {
      const double p = static_cast<double>(group.size());
      add_domain_cycles(flows, {group}, 2 * (p - 1) / p * bytes);
    }
  } else {
    add_rail_chains(flows, layout, groups, rails, share);
  }
  add_switch_reduction_edges(flows, layout, groups, rails, share);
}

// Rings: every hop of every channel is one flow carrying all the steps' bytes; a broadcast is a chain from the
// root (`root_gpu`) along the ring.
void add_ring_flows(const FlowList& flows, const std::vector<std::vector<int>>& rings, CollectiveOp op, int root_gpu,
                    int ranks, double bytes, double channels)
{
  const double n = ranks;
  for (const std::vector<int>& ring : rings) {
    const size_t m = ring.size();
    if (op == CollectiveOp::Broadcast) {
      // n - 1 hops, each forwarding the whole buffer (pipelined).
      const size_t root = static_cast<size_t>(std::find(ring.begin(), ring.end(), root_gpu) - ring.begin());
      for (size_t k = 0; k + 1 < m; ++k)
        flows.add(ring[(root + k) % m], ring[(root + k + 1) % m], bytes / channels, 1);
      continue;
    }
    const bool all_reduce = op == CollectiveOp::AllReduce;
    const int steps = all_reduce ? 2 * (ranks - 1) : ranks - 1;
    const double per_hop = (all_reduce ? 2.0 : 1.0) * (n - 1) / n * bytes / channels;
    for (size_t k = 0; k < m; ++k)
      flows.add(ring[k], ring[(k + 1) % m], per_hop, steps);
  }
}

} // namespace

CollectivePlan plan_collective(const topo::ClusterSpec& cluster, CollectiveOp op, const std::vector<int>& gpus,
                               double bytes, const CollectiveOptions& options)
{
  check_gpus(cluster, gpus);
  if (!(bytes >= 0))
    throw std::invalid_argument("collective: bytes must be >= 0");
  if (!options.all_to_all.rank.empty() && options.all_to_all.rank.size() != gpus.size())
    throw std::invalid_argument("collective: rank_weights must have one weight per rank");
  const NodeLayout layout(cluster);
  const auto groups = group_by_node(layout, gpus);
  const std::vector<int> rails = channel_rails(layout, groups);

  CollectivePlan plan;
  plan.op = op;
  plan.bytes = bytes;
  plan.ranks = static_cast<int>(gpus.size());
  plan.nodes = static_cast<int>(groups.size());
  plan.channels = static_cast<int>(rails.size());
  plan.domain_ranks = static_cast<int>(
      std::min_element(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); })
          ->size());
  const double bus_bytes_per_s = ring_bus_bytes_per_s(cluster, gpus);
  plan.choice = choose_nccl_algorithm(tuner_input(cluster, plan, bus_bytes_per_s, options));

  // The calibrated cost of NCCL's choice: latency, channels, and the protocol's bytes on the wire (nccl_cost).
  const NcclCost cost = nccl_cost(cluster, nccl_cost_input(cluster, plan, bus_bytes_per_s));
  plan.nccl_channels = cost.channels;
  plan.choice.latency_s = cost.latency_s;
  plan.transfer_s = cost.transfer_s;
  plan.host_issue_s = nccl_host_issue_s(cluster.nccl, options.gpus_per_thread);
  if (plan.ranks == 1 || bytes == 0 || !options.flows)
    return plan;

  const FlowList flows(plan.flows, cost.wire_factor);
  const double channels = plan.channels;
  if (op == CollectiveOp::SendRecv)
    add_send_recv_flows(flows, gpus, bytes);
  else if (op == CollectiveOp::AllToAll)
    add_all_to_all_flows(flows, layout, gpus, bytes, options);
  else if (plan.choice.algorithm == NcclAlgorithm::Tree)
    add_tree_flows(flows, layout, groups, rails, bytes, channels);
  else if (plan.choice.algorithm == NcclAlgorithm::Nvls || plan.choice.algorithm == NcclAlgorithm::NvlsTree) {
    const NvlsShape nvls = nvls_shape(cluster, plan);
    add_nvls_flows(flows, layout, groups, rails, bytes,
                   nvls_link_bytes(bytes, nvls.gpus_per_domain, nvls.heads, nvls.efficiency),
                   plan.choice.algorithm == NcclAlgorithm::NvlsTree);
  } else if (plan.choice.algorithm == NcclAlgorithm::CollNetDirect ||
             plan.choice.algorithm == NcclAlgorithm::CollNetChain)
    add_collnet_flows(flows, layout, groups, rails, bytes, plan.choice.algorithm == NcclAlgorithm::CollNetDirect);
  else
    add_ring_flows(flows, ring_orders(cluster, gpus), op, gpus.front(), plan.ranks, bytes, channels);
  return plan;
}

double nccl_tests_call_s(const CollectivePlan& plan)
{
  const double device_s = plan.ranks > 1 && plan.bytes > 0 ? plan.transfer_s + plan.choice.latency_s : 0.0;
  return nccl_back_to_back_call_s(device_s, plan.host_issue_s);
}

} // namespace gputwin::sim
