// ClusterGraph::dot(): the graph as Graphviz text, one cluster box per node.
#include "gputwin/topologies/cluster_graph.hpp"

#include "gputwin/common/json_writer.hpp"

#include <sstream>

namespace gputwin::topo {

namespace {

const char* shape_of(VertexKind kind)
{
  switch (kind) {
  case VertexKind::Gpu: return "box";
  case VertexKind::NvSwitch: return "hexagon";
  case VertexKind::PcieSwitch: return "ellipse";
  case VertexKind::Nic: return "cds";
  case VertexKind::FabricSwitch: return "diamond";
  }
  return "ellipse";
}

// "n3" (appended piecewise: GCC 12 falsely warns -Wrestrict on "n" + std::string, its bug 105651).
std::string node_name(int node)
{
  std::string name = "n";
  name += std::to_string(node);
  return name;
}

std::string quoted(const std::string& text)
{
  return "\"" + text + "\"";
}

} // namespace

std::string ClusterGraph::dot() const
{
  std::ostringstream out;
  const TopologySummary s = summary();
  out << "graph " << quoted(spec_.name) << " {\n";
  out << "  // " << s.nodes << " node(s), " << s.gpus << " GPUs, " << s.fabric_switches << " fabric switches, "
      << s.physical_links << " full-duplex links; edge labels: bandwidth per direction\n";
  out << "  node [fontsize=10];\n";
  int open_node = -1;
  for (const Vertex& v : vertices_) {
    if (v.node != open_node) {
      if (open_node >= 0)
        out << "  }\n";
      open_node = v.node;
      if (open_node >= 0)
        out << "  subgraph " << quoted("cluster_" + node_name(v.node)) << " {\n    label=" << quoted(node_name(v.node))
            << ";\n";
    }
    out << (open_node >= 0 ? "    " : "  ") << quoted(v.name) << " [shape=" << shape_of(v.kind) << "];\n";
  }
  if (open_node >= 0)
    out << "  }\n";
  for (size_t id = 0; id < links_.size(); id += 2) {
    const Link& link = links_[id];
    out << "  " << quoted(vertices_[static_cast<size_t>(link.from)].name) << " -- "
        << quoted(vertices_[static_cast<size_t>(link.to)].name)
        << " [label=" << quoted(json_number(link.bytes_per_s / 1e9) + " GB/s") << "];\n";
  }
  out << "}\n";
  return out.str();
}

} // namespace gputwin::topo
