#include "gputwin/topologies/cluster_graph.hpp"

#include "cluster_wiring.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/json_writer.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>

#include <algorithm>
#include <stdexcept>

namespace gputwin::topo {

struct ClusterGraph::BoostGraph {
  // One undirected edge per physical link: connectivity and hop counts.
  boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS> graph;
};

namespace {

// "n3." (appended piecewise: GCC 12 falsely warns -Wrestrict on "n" + std::string, its bug 105651).
std::string node_prefix(int node)
{
  std::string prefix = "n";
  prefix += std::to_string(node);
  prefix += '.';
  return prefix;
}

// "nvl2.nvswitch": the crossbar of NVLink domain 2 when a domain spans several nodes (appended piecewise, as above).
std::string domain_switch_name(int domain)
{
  std::string name = "nvl";
  name += std::to_string(domain);
  name += ".nvswitch";
  return name;
}

// The tree the graph is built on (ClusterGraph::routed_). Identical planes carrying equal shares of every transfer
// have identical max-min states, so they are one tree whose switch-to-switch links carry the planes' bandwidth
// together (build_fabric). Adaptive routing spreads every flow evenly over a leaf's u uplinks and, across pods, over
// the pod's u x g core uplinks: each uplink then carries 1/u (1/(u g)) of the leaf's (pod's) traffic, which is what
// one link of u (u g) times the bandwidth to one switch per tier carries, so the tiers collapse to a switch per pod.
FatTreeShape graph_shape(const FatTreeShape& physical, bool adaptive)
{
  if (!adaptive || physical.levels < 2)
    return physical;
  FatTreeShape g = physical;
  g.leaf_up_ports = 1;
  if (g.levels == 2) {
    g.spines = 1;
  } else {
    g.spines = g.pods; // one aggregation vertex per pod
    g.cores_per_group = 1;
    g.cores = 1;
  }
  return g;
}

} // namespace

ClusterGraph::ClusterGraph(ClusterSpec spec)
    : spec_(std::move(spec)), graph_(std::make_unique<BoostGraph>()), wiring_(std::make_unique<Wiring>())
{
  fabric_ = fat_tree_shape(spec_); // checks the spec first (require_consistent)
  routed_ = graph_shape(fabric_, spec_.fabric.adaptive_routing);
  build_nodes();
  build_fabric();
  check_links();
  apply_faults();
}

ClusterGraph::~ClusterGraph() = default;
ClusterGraph::ClusterGraph(ClusterGraph&&) noexcept = default;
ClusterGraph& ClusterGraph::operator=(ClusterGraph&&) noexcept = default;

int ClusterGraph::add_vertex(VertexKind kind, int node, int index, int level, std::string name)
{
  vertices_.push_back(Vertex{kind, node, index, level, std::move(name)});
  boost::add_vertex(graph_->graph);
  return static_cast<int>(vertices_.size()) - 1;
}

int ClusterGraph::add_link(int a, int b, LinkKind kind, double bytes_per_s, double latency_s)
{
  const int id = static_cast<int>(links_.size());
  const std::string& name_a = vertices_[static_cast<size_t>(a)].name;
  const std::string& name_b = vertices_[static_cast<size_t>(b)].name;
  links_.push_back(Link{a, b, kind, bytes_per_s, latency_s, name_a + "->" + name_b});
  links_.push_back(Link{b, a, kind, bytes_per_s, latency_s, name_b + "->" + name_a});
  boost::add_edge(static_cast<size_t>(a), static_cast<size_t>(b), graph_->graph);
  return id;
}

void ClusterGraph::build_nodes()
{
  Wiring& w = *wiring_;
  const int gpus = spec_.gpus_per_node;
  const int gpus_per_switch = gpus / spec_.pcie.switches_per_node;
  for (int i = 0; i < gpus; ++i)
    w.pcie_of_local_gpu.push_back(i / gpus_per_switch);
  w.rail_of_local_gpu.assign(static_cast<size_t>(gpus), -1);
  for (int n = spec_.nic.count - 1; n >= 0; --n) // the first NIC naming a GPU wins
    for (int gpu : spec_.nic.gpus[static_cast<size_t>(n)])
      w.rail_of_local_gpu[static_cast<size_t>(gpu)] = n;
  for (int n = 0; n < spec_.nic.count; ++n) {
    const int first = spec_.nic.gpus[static_cast<size_t>(n)].front();
    w.first_gpu_of_nic.push_back(first);
    w.pcie_of_nic.push_back(w.pcie_of_local_gpu[static_cast<size_t>(first)]);
  }

  // One crossbar per NVLink domain, after the GPUs of the domain's first node: "n3.nvswitch" when the domain is
  // the node, "nvl2.nvswitch" when it spans several nodes.
  const int nodes_per_domain = spec_.nodes_per_domain();
  int nvswitch = -1;
  for (int node = 0; node < spec_.nodes; ++node) {
    const std::string prefix = node_prefix(node);
    const int first_gpu = static_cast<int>(vertices_.size());
    for (int i = 0; i < gpus; ++i)
      gpu_vertices_.push_back(add_vertex(VertexKind::Gpu, node, i, 0, prefix + "gpu" + std::to_string(i)));
    if (node % nodes_per_domain == 0)
      nvswitch = add_vertex(VertexKind::NvSwitch, node, 0, 0,
                            nodes_per_domain == 1 ? prefix + "nvswitch" : domain_switch_name(node / nodes_per_domain));
    const int first_pcie = static_cast<int>(vertices_.size());
    for (int s = 0; s < spec_.pcie.switches_per_node; ++s)
      add_vertex(VertexKind::PcieSwitch, node, s, 0, prefix + "pcie" + std::to_string(s));
    const int first_nic = static_cast<int>(vertices_.size());
    for (int n = 0; n < spec_.nic.count; ++n)
      add_vertex(VertexKind::Nic, node, n, 0, prefix + "nic" + std::to_string(n));

    for (int i = 0; i < gpus; ++i)
      w.gpu_nvlink.push_back(
          add_link(first_gpu + i, nvswitch, LinkKind::Nvlink, spec_.nvlink.bytes_per_s, spec_.nvlink.latency_s));
    for (int i = 0; i < gpus; ++i)
      w.gpu_pcie.push_back(add_link(first_gpu + i, first_pcie + w.pcie_of_local_gpu[static_cast<size_t>(i)],
                                    LinkKind::Pcie, spec_.pcie.bytes_per_s, spec_.pcie.latency_s));
    for (int n = 0; n < spec_.nic.count; ++n)
      w.nic_pcie.push_back(add_link(first_pcie + w.pcie_of_nic[static_cast<size_t>(n)], first_nic + n, LinkKind::Pcie,
                                    spec_.pcie.bytes_per_s, spec_.pcie.latency_s));
  }
}

void ClusterGraph::build_fabric()
{
  const FatTreeShape& t = routed_;
  if (t.levels == 0)
    return;
  const bool adaptive = spec_.fabric.adaptive_routing;
  Wiring& w = *wiring_;
  const int nics = spec_.nic.count;
  const int u = t.leaf_up_ports;
  const int per_group = t.cores_per_group; // cores per group (3 levels)

  const int first_leaf = static_cast<int>(vertices_.size());
  for (int l = 0; l < t.leaves; ++l)
    add_vertex(VertexKind::FabricSwitch, -1, l, 1,
               t.rail_optimized ? "leaf.r" + std::to_string(l % nics) + "." + std::to_string(l / nics)
                                : "leaf." + std::to_string(l));
  const int first_spine = static_cast<int>(vertices_.size());
  for (int k = 0; k < t.spines; ++k) // adaptive routing: "spines", or "agg.pP" for pod P's aggregation tier
    add_vertex(VertexKind::FabricSwitch, -1, k, 2,
               t.levels == 2 ? (adaptive ? std::string("spines") : "spine." + std::to_string(k))
                             : "agg.p" + std::to_string(k / u) + (adaptive ? "" : "." + std::to_string(k % u)));
  const int first_core = static_cast<int>(vertices_.size());
  for (int c = 0; c < t.cores; ++c)
    add_vertex(VertexKind::FabricSwitch, -1, c, 3, adaptive ? std::string("cores") : "core." + std::to_string(c));

  // NICs: their whole bandwidth over all planes. Switch-to-switch: the planes' links together, and with adaptive
  // routing the physical links a bundle stands for (a leaf's u uplinks; a pod's u x g core uplinks).
  const double nic_bw = spec_.nic.bytes_per_s;
  const double planes = spec_.fabric.planes;
  const double leaf_up_bw = spec_.fabric.link_bytes_per_s * planes * (adaptive ? fabric_.leaf_up_ports : 1);
  const double agg_up_bw =
      spec_.fabric.link_bytes_per_s * planes * (adaptive ? fabric_.leaf_up_ports * fabric_.cores_per_group : 1);
  const double switch_latency = spec_.fabric.switch_latency_s;
  for (int node = 0; node < spec_.nodes; ++node) {
    for (int n = 0; n < nics; ++n) {
      const int leaf = t.leaf_of_nic(node, n);
      const int nic_vertex = links_[static_cast<size_t>(w.nic_pcie[static_cast<size_t>(node * nics + n)])].to;
      w.leaf_of_nic.push_back(leaf);
      // Half a switch traversal each way: a route enters and leaves the fabric once, so with the switch-to-switch
      // links' whole one it pays one per switch it crosses (one leaf: one; leaf, spine, leaf: three).
      w.nic_leaf.push_back(add_link(nic_vertex, first_leaf + leaf, LinkKind::NicToFabric, nic_bw,
                                    spec_.nic.latency_s + switch_latency / 2));
    }
  }
  for (int l = 0; l < t.leaves; ++l) {
    const int pod_first_agg = t.levels == 3 ? (l / t.leaves_per_pod) * u : 0;
    for (int k = 0; k < u && t.levels >= 2; ++k)
      w.leaf_up.push_back(
          add_link(first_leaf + l, first_spine + pod_first_agg + k, LinkKind::Fabric, leaf_up_bw, switch_latency));
  }
  for (int a = 0; a < t.spines && t.levels == 3; ++a) {
    const int group = a % u;
    for (int c = 0; c < per_group; ++c)
      w.agg_up.push_back(
          add_link(first_spine + a, first_core + group * per_group + c, LinkKind::Fabric, agg_up_bw, switch_latency));
  }
}

std::vector<int> ClusterGraph::hop_counts(int from_vertex) const
{
  std::vector<int> hops(vertices_.size(), -1);
  hops.at(static_cast<size_t>(from_vertex)) = 0;
  boost::breadth_first_search(
      graph_->graph, boost::vertex(static_cast<size_t>(from_vertex), graph_->graph),
      boost::visitor(boost::make_bfs_visitor(boost::record_distances(hops.data(), boost::on_tree_edge()))));
  return hops;
}

void ClusterGraph::check_links() const
{
  for (const Link& link : links_)
    if (!(link.bytes_per_s > 0))
      throw InputError("cluster '" + spec_.name + "': link " + link.name + " has bandwidth " +
                       json_number(link.bytes_per_s) + " B/s (expected a positive bandwidth)");
  // Connected: every vertex, so every GPU, is reachable from the first GPU.
  const std::vector<int> hops = hop_counts(gpu_vertices_.front());
  const auto unreachable =
      std::find_if(gpu_vertices_.begin(), gpu_vertices_.end(), [&](int v) { return hops[static_cast<size_t>(v)] < 0; });
  int vertex = unreachable == gpu_vertices_.end() ? -1 : *unreachable;
  if (vertex < 0) {
    const auto other = std::find(hops.begin(), hops.end(), -1);
    vertex = other == hops.end() ? -1 : static_cast<int>(other - hops.begin());
  }
  if (vertex >= 0)
    throw InputError("cluster '" + spec_.name +
                     "': disconnected topology: " + vertices_[static_cast<size_t>(vertex)].name +
                     " is unreachable from " + vertices_[static_cast<size_t>(gpu_vertices_.front())].name +
                     " (expected NICs and a fabric joining the nodes)");
}

int ClusterGraph::gpu_vertex(int gpu) const
{
  return gpu_vertices_.at(static_cast<size_t>(gpu));
}

std::vector<int> ClusterGraph::route(int src_gpu, int dst_gpu) const
{
  const Wiring& w = *wiring_;
  const int gpus = spec_.gpus_per_node;
  if (src_gpu < 0 || dst_gpu < 0 || src_gpu >= gpu_count() || dst_gpu >= gpu_count())
    throw std::out_of_range("ClusterGraph::route: GPU out of range");
  std::vector<int> path;
  if (src_gpu == dst_gpu)
    return path;
  const auto at = [](const std::vector<int>& table, int index) { return table[static_cast<size_t>(index)]; };
  if (!failed_.empty())
    return route_around_faults(src_gpu, dst_gpu);
  if (spec_.same_nvlink_domain(src_gpu, dst_gpu)) // same node, or another node (tray) of the NVLink domain
    return {at(w.gpu_nvlink, src_gpu), reverse_link(at(w.gpu_nvlink, dst_gpu))};
  // The rail of the destination GPU: NIC r on both nodes.
  inter_node_path(src_gpu, dst_gpu, at(w.rail_of_local_gpu, dst_gpu % gpus), false, path);
  return path;
}

double ClusterGraph::path_latency_s(const std::vector<int>& links) const
{
  double s = 0;
  for (const int link : links)
    s += links_.at(static_cast<size_t>(link)).latency_s;
  return s;
}

bool ClusterGraph::inter_node_path(int src_gpu, int dst_gpu, int rail, bool avoid, std::vector<int>& path) const
{
  const Wiring& w = *wiring_;
  const int gpus = spec_.gpus_per_node;
  const auto at = [](const std::vector<int>& table, int index) { return table[static_cast<size_t>(index)]; };
  const int src_node = src_gpu / gpus;
  const int dst_node = dst_gpu / gpus;
  const int rail_switch = at(w.pcie_of_nic, rail);
  const int rail_gpu = at(w.first_gpu_of_nic, rail);
  path.clear();
  path.reserve(14);
  int src = src_gpu;
  if (at(w.pcie_of_local_gpu, src_gpu % gpus) != rail_switch) { // PXN: NVLink to a GPU beside the NIC first
    src = src_node * gpus + rail_gpu;
    path.push_back(at(w.gpu_nvlink, src_gpu));
    path.push_back(reverse_link(at(w.gpu_nvlink, src)));
  }
  const int src_nic = src_node * spec_.nic.count + rail;
  const int dst_nic = dst_node * spec_.nic.count + rail;
  path.push_back(at(w.gpu_pcie, src));
  path.push_back(at(w.nic_pcie, src_nic));
  path.push_back(at(w.nic_leaf, src_nic));

  // Up-down through the fat tree, uplinks chosen by the destination's routing index e (D-mod-K: the leaf's
  // destinations on distinct uplinks, every rail over every spine; deterministic).
  const int src_leaf = at(w.leaf_of_nic, src_nic);
  const int dst_leaf = at(w.leaf_of_nic, dst_nic);
  if (src_leaf != dst_leaf) {
    const int u = routed_.leaf_up_ports;
    const int e = routed_.routing_index_of_nic(dst_node, rail);
    int k = e % u;
    const bool cross_pod = routed_.levels == 3 && src_leaf / routed_.leaves_per_pod != dst_leaf / routed_.leaves_per_pod;
    const int per_group = routed_.cores_per_group;
    int core = routed_.levels == 3 ? (e / u) % per_group : 0;
    const int src_pod = routed_.levels == 3 ? src_leaf / routed_.leaves_per_pod : 0;
    const int dst_pod = routed_.levels == 3 ? dst_leaf / routed_.leaves_per_pod : 0;
    if (avoid) {
      // The (uplink, core) choices whose four links work; the default when it does, else one of the others
      // picked by the destination, so the flows a failed link carried spread over the remaining paths.
      const auto works = [&](int kk, int cc) {
        if (link_failed(at(w.leaf_up, src_leaf * u + kk)) || link_failed(at(w.leaf_up, dst_leaf * u + kk)))
          return false;
        return !cross_pod || (!link_failed(at(w.agg_up, (src_pod * u + kk) * per_group + cc)) &&
                              !link_failed(at(w.agg_up, (dst_pod * u + kk) * per_group + cc)));
      };
      if (!works(k, core)) {
        std::vector<std::pair<int, int>> healthy;
        for (int kk = 0; kk < u; ++kk)
          for (int cc = 0; cc < (cross_pod ? per_group : 1); ++cc)
            if (works(kk, cross_pod ? cc : core))
              healthy.emplace_back(kk, cross_pod ? cc : core);
        if (healthy.empty())
          return false;
        std::tie(k, core) = healthy[static_cast<size_t>(e / (u * (cross_pod ? per_group : 1))) % healthy.size()];
      }
    }
    path.push_back(at(w.leaf_up, src_leaf * u + k));
    if (cross_pod) {
      path.push_back(at(w.agg_up, (src_pod * u + k) * per_group + core));
      path.push_back(reverse_link(at(w.agg_up, (dst_pod * u + k) * per_group + core)));
    }
    path.push_back(reverse_link(at(w.leaf_up, dst_leaf * u + k)));
  }

  path.push_back(reverse_link(at(w.nic_leaf, dst_nic)));
  path.push_back(reverse_link(at(w.nic_pcie, dst_nic)));
  if (at(w.pcie_of_local_gpu, dst_gpu % gpus) == rail_switch) {
    path.push_back(reverse_link(at(w.gpu_pcie, dst_gpu)));
  } else { // the destination is not beside its NIC: through the NIC's first GPU, then NVLink
    const int via = dst_node * gpus + rail_gpu;
    path.push_back(reverse_link(at(w.gpu_pcie, via)));
    path.push_back(at(w.gpu_nvlink, via));
    path.push_back(reverse_link(at(w.gpu_nvlink, dst_gpu)));
  }
  return !avoid || std::none_of(path.begin(), path.end(), [&](int link) { return link_failed(link); });
}

TopologySummary ClusterGraph::summary() const
{
  TopologySummary s;
  s.nodes = spec_.nodes;
  s.gpus = spec_.gpus();
  s.nvlink_domain_gpus = spec_.domain_gpus();
  s.nvlink_domains = spec_.nvlink_domains();
  s.nvswitch_chips = spec_.nvlink.switch_chips * s.nvlink_domains;
  s.pcie_switches = spec_.pcie.switches_per_node * spec_.nodes;
  s.nics = spec_.nic.count * spec_.nodes;
  // Physical counts: every plane's switches and cables (the graph holds the planes as one tree, and with adaptive
  // routing a tier's uplinks as one bundle).
  const int planes = spec_.fabric.planes;
  s.fabric_switches_per_level = fabric_.switches_per_level();
  for (int& count : s.fabric_switches_per_level)
    count *= planes;
  s.fabric_switches = fabric_.switches() * planes;
  const auto fabric_cables = [&](const FatTreeShape& t) {
    int64_t cables = t.levels >= 1 ? int64_t{spec_.nodes} * spec_.nic.count : 0;
    if (t.levels >= 2)
      cables += int64_t{t.leaves} * t.leaf_up_ports;
    if (t.levels == 3)
      cables += int64_t{t.spines} * t.cores_per_group;
    return cables;
  };
  s.physical_links =
      static_cast<int>(static_cast<int64_t>(links_.size() / 2) - fabric_cables(routed_) + planes * fabric_cables(fabric_));
  s.nvlink_bytes_per_s_per_gpu = spec_.nvlink.bytes_per_s;
  s.injection_bytes_per_s_per_gpu = spec_.nic.count * spec_.nic.bytes_per_s / spec_.gpus_per_node;
  // Per direction across the worst half/half node cut: the NICs of half the nodes, capped by half the leaf
  // uplinks (2+ levels) and half the aggregation uplinks (3 levels). topologies/README.md, "Summary".
  if (spec_.nodes > 1) {
    const double link_bw = spec_.fabric.link_bytes_per_s * planes; // a cable of each plane
    double bisection = (spec_.nodes / 2) * spec_.nic.count * spec_.nic.bytes_per_s;
    if (fabric_.levels >= 2)
      bisection = std::min(bisection, fabric_.leaves * fabric_.leaf_up_ports * link_bw / 2);
    if (fabric_.levels == 3)
      bisection = std::min(bisection, fabric_.spines * fabric_.cores_per_group * link_bw / 2);
    s.bisection_bytes_per_s = bisection;
  }
  return s;
}

} // namespace gputwin::topo
