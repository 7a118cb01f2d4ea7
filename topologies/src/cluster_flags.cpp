#include "gputwin/topologies/cluster_flags.hpp"

#include "gputwin/models/input_error.hpp"

#include <limits>

namespace gputwin::topo {

void add_cluster_flags(cli::ArgParser& parser, const std::string& default_text)
{
  parser.add_section("cluster");
  parser.add_option("--cluster", "NAME|FILE",
                    "built-in cluster (" + builtin_cluster_names() + ") or a cluster .yaml file (" +
                        (default_text.empty() ? "default " + std::string(default_cluster) : default_text) + ")");
  parser.add_option("--nodes", "N", "number of nodes (default: the cluster file's `nodes`)");
  parser.add_option("--set", "KEY=VALUE",
                    "override a field of the cluster file, e.g. --set node.nvlink.gbytes_per_s=250 (repeatable)", true);
}

ClusterSpec read_cluster(const cli::ParsedArgs& args)
{
  int nodes = 0; // 0: the file's
  if (const std::optional<int64_t> value = args.integer("--nodes")) {
    if (*value <= 0 || *value > std::numeric_limits<int>::max())
      throw InputError("--nodes: expected a positive integer, got " + std::to_string(*value));
    nodes = static_cast<int>(*value);
  }
  return load_cluster(args.value("--cluster").value_or(default_cluster), nodes, args.values("--set"));
}

} // namespace gputwin::topo
