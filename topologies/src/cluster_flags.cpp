#include "gputwin/topologies/cluster_flags.hpp"

#include "gputwin/common/input_error.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

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
  parser.add_option("--degrade-link", "NAME=FACTOR",
                    "a cable at FACTOR (> 0) x its bandwidth; NAME a directed link, e.g. n0.nic0->leaf.r0.0 (repeatable)",
                    true);
  parser.add_option("--fail-link", "NAME",
                    "a failed cable: routes avoid it where the topology has another path (repeatable)", true);
  parser.add_option("--fail-nic", "NODE:NIC",
                    "a failed NIC, e.g. 3:5; NCCL's rings use the remaining rails (repeatable)", true);
}

FabricFaults read_fabric_faults(const cli::ParsedArgs& args)
{
  FabricFaults faults;
  for (const std::string& text : args.values("--degrade-link")) {
    const size_t eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--degrade-link: expected NAME=FACTOR, got '" + text + "'");
    const std::string factor_text = text.substr(eq + 1);
    double factor = 0;
    try {
      size_t used = 0;
      factor = std::stod(factor_text, &used);
      if (used != factor_text.size())
        throw std::invalid_argument(factor_text);
    } catch (const std::exception&) {
      throw InputError("--degrade-link: expected a number as FACTOR, got '" + factor_text + "' in '" + text + "'");
    }
    if (!(factor > 0) || !std::isfinite(factor))
      throw InputError("--degrade-link: expected a FACTOR > 0, got '" + factor_text + "' in '" + text + "'");
    faults.degraded_links.emplace_back(text.substr(0, eq), factor);
  }
  for (const std::string& name : args.values("--fail-link")) {
    if (name.empty())
      throw InputError("--fail-link: expected a link name, got ''");
    faults.failed_links.push_back(name);
  }
  for (const std::string& text : args.values("--fail-nic")) {
    const size_t colon = text.find(':');
    if (colon == std::string::npos)
      throw InputError("--fail-nic: expected NODE:NIC, e.g. 3:5, got '" + text + "'");
    const int64_t node = cli::parse_integer("--fail-nic", text.substr(0, colon));
    const int64_t nic = cli::parse_integer("--fail-nic", text.substr(colon + 1));
    if (node < 0 || nic < 0 || node > std::numeric_limits<int>::max() || nic > std::numeric_limits<int>::max())
      throw InputError("--fail-nic: expected NODE:NIC with non-negative integers, got '" + text + "'");
    faults.failed_nics.emplace_back(static_cast<int>(node), static_cast<int>(nic));
  }
  return faults;
}

ClusterRequest read_cluster_request(const cli::ParsedArgs& args)
{
  ClusterRequest request;
  if (const std::optional<int64_t> value = args.integer("--nodes")) {
    if (*value <= 0 || *value > std::numeric_limits<int>::max())
      throw InputError("--nodes: expected a positive integer, got " + std::to_string(*value));
    request.nodes = static_cast<int>(*value);
  }
  request.faults = read_fabric_faults(args); // malformed values first: no file is read for them
  request.name_or_path = args.value("--cluster").value_or(default_cluster);
  request.set_overrides = args.values("--set");
  return request;
}

ClusterSpec read_cluster(const cli::ParsedArgs& args)
{
  return load_cluster(read_cluster_request(args));
}

ClusterSpec read_cluster(const cli::ParsedArgs& args, int nodes)
{
  FabricFaults faults = read_fabric_faults(args); // malformed values first: no file is read for them
  ClusterSpec spec = load_cluster(args.value("--cluster").value_or(default_cluster), nodes, args.values("--set"));
  spec.faults = std::move(faults);
  return spec;
}

} // namespace gputwin::topo
