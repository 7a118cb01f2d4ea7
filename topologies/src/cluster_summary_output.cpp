#include "gputwin/topologies/cluster_summary_output.hpp"

#include "gputwin/common/json_writer.hpp"

#include <cstdio>
#include <string>

namespace gputwin::topo {

namespace {

double gbytes(double bytes)
{
  return bytes / 1e9;
}

void print_row(std::ostream& out, const char* label, const std::string& value)
{
  char line[64];
  std::snprintf(line, sizeof line, "%-16s ", label);
  out << line << value << "\n";
}

std::string describe_fabric(const ClusterGraph& graph)
{
  const FatTreeShape& tree = graph.fabric();
  const FabricSpec& spec = graph.spec().fabric;
  if (tree.levels == 0)
    return "none (a single node)";
  static const char* const level_names[] = {"leaves", "spines", "cores"};
  std::string text = std::to_string(tree.levels) + (tree.levels == 1 ? " level: " : " levels: ");
  const TopologySummary s = graph.summary(); // every plane's switches
  const std::vector<int>& counts = s.fabric_switches_per_level;
  for (size_t level = 0; level < counts.size(); ++level)
    text += (level ? " + " : "") + std::to_string(counts[level]) + " " +
            (level == 1 && tree.levels == 3 ? "aggregation" : level_names[level]);
  text += " = " + std::to_string(s.fabric_switches) + " switches (" +
          (spec.rail_optimized ? "rail-optimized" : "not rail-optimized") + ", radix " +
          std::to_string(spec.switch_radix) + ", oversubscription " + json_number(spec.oversubscription) +
          (spec.spine_oversubscription != 1 ? " / " + json_number(spec.spine_oversubscription) : "") +
          (spec.planes > 1 ? ", " + std::to_string(spec.planes) + " planes" : "") +
          (spec.adaptive_routing ? ", adaptive routing" : "") + ")";
  return text;
}

} // namespace

void print_summary_table(std::ostream& out, const ClusterGraph& graph)
{
  const ClusterSpec& spec = graph.spec();
  const TopologySummary s = graph.summary();
  const std::string per_node = " per node";
  print_row(out, "cluster", spec.name + " (" + spec.source + ")");
  print_row(out, "GPU",
            spec.gpu.kind + ": " + json_number(spec.gpu.peak_bf16_flops / 1e12) + " TFLOP/s bf16, " +
                json_number(static_cast<double>(spec.gpu.hbm_bytes) / (1024.0 * 1024 * 1024)) + " GiB HBM at " +
                json_number(gbytes(spec.gpu.hbm_bytes_per_s)) + " GB/s");
  print_row(out, "nodes", std::to_string(s.nodes));
  print_row(out, "GPUs", std::to_string(s.gpus) + " (" + std::to_string(spec.gpus_per_node) + per_node + ")");
  const bool node_domain = spec.nodes_per_domain() == 1;
  print_row(out, "NVLink domains",
            std::to_string(s.nvlink_domains) + " of " + std::to_string(s.nvlink_domain_gpus) + " GPUs" +
                (node_domain ? " (the node)"
                             : " (" + std::to_string(spec.nodes_per_domain()) + " nodes each" +
                                   (spec.nvlink.segments ? ": the job's segment of each rack, node.nvlink.segments)"
                                                         : ")")));
  print_row(out, "NVSwitch chips",
            std::to_string(s.nvswitch_chips) + " (" + std::to_string(spec.nvlink.switch_chips) +
                (node_domain ? per_node + "; one logical crossbar per node in the graph)"
                             : " per domain; one logical crossbar per domain in the graph)"));
  print_row(out, "PCIe switches",
            std::to_string(s.pcie_switches) + " (" + std::to_string(spec.pcie.switches_per_node) + per_node + ")");
  print_row(out, "NICs",
            std::to_string(s.nics) + " (" + std::to_string(spec.nic.count) + per_node + ", " +
                json_number(gbytes(spec.nic.bytes_per_s)) + " GB/s each)");
  print_row(out, "fabric", describe_fabric(graph));
  const bool merged = spec.fabric.planes > 1 || spec.fabric.adaptive_routing; // the graph's links are fewer
  print_row(out, "physical links",
            std::to_string(s.physical_links) + " full-duplex (" + std::to_string(graph.links().size()) + " directed" +
                (merged ? " in the graph: planes as one tree, adaptive routing's uplinks as bundles" : "") + ")");
  print_row(out, "NVLink", json_number(gbytes(s.nvlink_bytes_per_s_per_gpu)) + " GB/s per GPU, per direction");
  print_row(out, "injection",
            json_number(gbytes(s.injection_bytes_per_s_per_gpu)) +
                " GB/s per GPU, per direction (NICs / GPUs of a node)");
  print_row(out, "bisection",
            json_number(gbytes(s.bisection_bytes_per_s)) + " GB/s per direction (worst half/half cut of the nodes)");
}

void write_summary_json(std::ostream& out, const ClusterGraph& graph)
{
  const TopologySummary s = graph.summary();
  JsonWriter json(out);
  json.begin_object();
  json.field("cluster", graph.spec().name);
  json.field("nodes", s.nodes);
  json.field("gpus", s.gpus);
  json.field("gpus_per_node", graph.spec().gpus_per_node);
  json.field("nvlink_domain_gpus", s.nvlink_domain_gpus);
  json.field("nvlink_domains", s.nvlink_domains);
  json.field("nvswitch_chips", s.nvswitch_chips);
  json.field("pcie_switches", s.pcie_switches);
  json.field("nics", s.nics);
  json.field("nics_per_node", graph.spec().nic.count);
  json.key("fabric_switches_per_level");
  json.begin_array();
  for (int count : s.fabric_switches_per_level)
    json.value(count);
  json.end_array();
  json.field("fabric_switches", s.fabric_switches);
  json.field("fabric_planes", graph.spec().fabric.planes);
  json.field("adaptive_routing", graph.spec().fabric.adaptive_routing);
  json.field("physical_links", s.physical_links);
  json.field("nvlink_gbps_per_gpu", gbytes(s.nvlink_bytes_per_s_per_gpu));
  json.field("injection_gbps_per_gpu", gbytes(s.injection_bytes_per_s_per_gpu));
  json.field("bisection_gbps", gbytes(s.bisection_bytes_per_s));
  json.end_object();
}

} // namespace gputwin::topo
