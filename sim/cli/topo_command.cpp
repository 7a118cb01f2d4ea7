// `gputwin topo`: the graph of a cluster -- its GPUs, switches and links, injection and bisection bandwidth,
// or the whole graph as Graphviz text.
#include "commands.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/topologies/cluster_graph.hpp"
#include "gputwin/topologies/cluster_summary_output.hpp"

namespace gputwin::cli {

int run_topo(const std::vector<std::string>& args, std::ostream& out)
{
  ArgParser parser("gputwin topo",
                   "The graph of a cluster: GPUs, NVSwitch, PCIe switches, NICs and the fat tree joining the nodes,\n"
                   "with its link count, NVLink, injection and bisection bandwidth (GB/s = 1e9 bytes/s, per\n"
                   "direction). --dot prints the whole graph as Graphviz text.\n\n"
                   "example: gputwin topo --cluster dgx-a100 --nodes 64\n"
                   "         gputwin topo --cluster dgx-h100 --nodes 2 --dot | dot -Tsvg > dgx-h100.svg");
  topo::add_cluster_flags(parser);
  parser.add_section("output");
  parser.add_switch("--json", "machine-readable summary (bandwidths in GB/s, keys ending in _gbps)");
  parser.add_switch("--dot", "Graphviz text of the graph: one box per node, edges labelled with GB/s");
  const ParsedArgs parsed = parser.parse(args);
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  if (parsed.has("--json") && parsed.has("--dot"))
    throw InputError("--dot: cannot be combined with --json (expected one of them)");
  const topo::ClusterGraph graph(topo::read_cluster(parsed));
  if (parsed.has("--dot"))
    out << graph.dot();
  else if (parsed.has("--json"))
    topo::write_summary_json(out, graph);
  else
    topo::print_summary_table(out, graph);
  return 0;
}

} // namespace gputwin::cli
