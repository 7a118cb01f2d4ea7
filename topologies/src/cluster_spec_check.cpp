#include "cluster_spec_check.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/topologies/fat_tree.hpp"
#include "gputwin/common/json_writer.hpp"

#include <cmath>
#include <vector>

namespace gputwin::topo {

namespace {


// A value whose SI conversion overflowed (1e300 Gbit/s is inf bytes/s): every later formula would print "inf"
// or "null" and divide by it.
std::optional<SpecProblem> overflowed(const std::string& field, double value)
{
  if (!std::isinf(value))
    return std::nullopt;
  return SpecProblem{field, "overflows a double once converted to SI units (expected a realistic value)"};
}

std::optional<SpecProblem> positive(const std::string& field, double value)
{
  if (auto p = overflowed(field, value))
    return p;
  if (value > 0)
    return std::nullopt;
  return SpecProblem{field, "expected a positive number, got " + json_number(value)};
}

std::optional<SpecProblem> non_negative(const std::string& field, double value)
{
  if (auto p = overflowed(field, value))
    return p;
  if (value >= 0)
    return std::nullopt;
  return SpecProblem{field, "expected a number >= 0, got " + json_number(value)};
}

std::optional<SpecProblem> in_range(const std::string& field, int64_t value, int64_t low, int64_t high)
{
  if (value >= low && value <= high)
    return std::nullopt;
  return SpecProblem{field, "expected an integer from " + std::to_string(low) + " to " + std::to_string(high) +
                                ", got " + std::to_string(value)};
}

std::optional<SpecProblem> fraction(const std::string& field, double value)
{
  if (value > 0 && value <= 1)
    return std::nullopt;
  return SpecProblem{field, "expected a fraction of line rate in (0, 1], got " + json_number(value)};
}

// The NVLink domain (0: the node) is a whole number of nodes: a tray belongs to one domain.
std::optional<SpecProblem> check_nvlink_domain(const ClusterSpec& spec)
{
  const int domain = spec.nvlink.domain_gpus;
  if (domain == 0)
    return std::nullopt;
  if (auto p = in_range("node.nvlink.domain_gpus", domain, 1, max_cluster_gpus))
    return p;
  if (domain % spec.gpus_per_node != 0)
    return SpecProblem{"node.nvlink.domain_gpus", std::to_string(domain) + " GPUs are not a whole number of " +
                                                      std::to_string(spec.gpus_per_node) +
                                                      "-GPU nodes (expected a multiple of node.gpus)"};
  return std::nullopt;
}

std::optional<SpecProblem> check_rail_map(const ClusterSpec& spec)
{
  const NicSpec& nic = spec.nic;
  if (nic.count == 0)
    return std::nullopt; // no NICs: the rail map is not used
  if (static_cast<int>(nic.gpus.size()) != nic.count)
    return SpecProblem{"node.nics.gpus", "expected " + std::to_string(nic.count) +
                                             " entries (one list of local GPUs per NIC, node.nics.count), got " +
                                             std::to_string(nic.gpus.size())};
  std::vector<bool> served(static_cast<size_t>(spec.gpus_per_node), false);
  for (size_t n = 0; n < nic.gpus.size(); ++n) {
    const std::string field = "node.nics.gpus." + std::to_string(n);
    if (nic.gpus[n].empty())
      return SpecProblem{field, "expected the local GPUs NIC " + std::to_string(n) + " serves, got an empty list"};
    for (size_t i = 0; i < nic.gpus[n].size(); ++i) {
      const int gpu = nic.gpus[n][i];
      if (gpu < 0 || gpu >= spec.gpus_per_node)
        return SpecProblem{field + "." + std::to_string(i), "expected a local GPU index from 0 to " +
                                                                std::to_string(spec.gpus_per_node - 1) + ", got " +
                                                                std::to_string(gpu)};
      served[static_cast<size_t>(gpu)] = true;
    }
  }
  for (size_t gpu = 0; gpu < served.size(); ++gpu)
    if (!served[gpu])
      return SpecProblem{"node.nics.gpus", "local GPU " + std::to_string(gpu) +
                                               " is served by no NIC (expected every GPU in some NIC's list)"};
  return std::nullopt;
}

std::optional<SpecProblem> check_fabric(const ClusterSpec& spec)
{
  const FabricSpec& f = spec.fabric;
  if (auto p = in_range("fabric.levels", f.levels, 1, 3))
    return p;
  if (auto p = in_range("fabric.switch_radix", f.switch_radix, 2, max_switch_radix))
    return p;
  if (auto p = positive("fabric.oversubscription", f.oversubscription))
    return p;
  if (auto p = positive("fabric.oversubscription", f.spine_oversubscription))
    return p;
  // Each tier's switch keeps at least one port down and one up (the aggregation tier also at least two: a pod of
  // one leaf would be no tree).
  const auto tier_problem = [&](double ratio, int down, int least_down,
                                const char* tier) -> std::optional<SpecProblem> {
    if (down >= least_down && f.switch_radix - down >= 1)
      return std::nullopt;
    return SpecProblem{"fabric.oversubscription",
                       json_number(ratio) + " leaves a radix-" + std::to_string(f.switch_radix) + " " + tier + " " +
                           std::to_string(down) + " down and " + std::to_string(f.switch_radix - down) +
                           " up ports (expected a ratio leaving at least " +
                           (least_down > 1 ? "two down and one up)" : "one of each)")};
  };
  if (auto p = tier_problem(f.oversubscription, leaf_down_ports(f), 1, "leaf"))
    return p;
  if (f.levels == 3)
    if (auto p = tier_problem(f.spine_oversubscription, aggregation_down_ports(f), 2, "aggregation switch"))
      return p;
  if (auto p = positive("fabric.link_gbits_per_s", f.link_bytes_per_s))
    return p;
  if (auto p = non_negative("fabric.switch_latency_us", f.switch_latency_s))
    return p;
  if (f.planes < 1 || f.planes > 16)
    return SpecProblem{"fabric.planes", std::to_string(f.planes) + " (expected 1 to 16 planes)"};
  const int64_t max_nodes = max_fabric_nodes(spec);
  if (spec.nodes > max_nodes)
    return SpecProblem{"fabric.levels",
                       std::to_string(spec.nodes) + " nodes do not fit " + std::to_string(f.levels) +
                           (f.levels == 1 ? " level" : " levels") + " of radix-" + std::to_string(f.switch_radix) +
                           " switches (expected --nodes at most " + std::to_string(max_nodes) +
                           (f.levels < 3 ? ", or more fabric.levels)" : ", or a larger fabric.switch_radix)")};
  return std::nullopt;
}

} // namespace

std::optional<SpecProblem> find_spec_problem(const ClusterSpec& spec)
{
  if (auto p = in_range("nodes", spec.nodes, 1, max_cluster_gpus))
    return p;
  if (auto p = positive("gpu.peak_bf16_tflops", spec.gpu.peak_bf16_flops))
    return p;
  if (auto p = non_negative("gpu.peak_fp8_tflops", spec.gpu.peak_fp8_flops)) // 0: no FP8 tensor cores
    return p;
  if (auto p = non_negative("gpu.peak_fp4_tflops", spec.gpu.peak_fp4_flops)) // 0: no FP4 tensor cores
    return p;
  if (auto p = positive("gpu.hbm_gbytes", static_cast<double>(spec.gpu.hbm_bytes)))
    return p;
  if (auto p = positive("gpu.hbm_gbytes_per_s", spec.gpu.hbm_bytes_per_s))
    return p;
  if (auto p = in_range("node.gpus", spec.gpus_per_node, 1, max_gpus_per_node))
    return p;
  if (int64_t{spec.nodes} * spec.gpus_per_node > max_cluster_gpus)
    return SpecProblem{"nodes", std::to_string(spec.nodes) + " nodes of " + std::to_string(spec.gpus_per_node) +
                                    " GPUs exceed the " + std::to_string(max_cluster_gpus) +
                                    " GPUs gputwin builds (expected fewer --nodes)"};
  if (auto p = positive("node.nvlink.gbytes_per_s", spec.nvlink.bytes_per_s))
    return p;
  if (auto p = non_negative("node.nvlink.latency_us", spec.nvlink.latency_s))
    return p;
  if (auto p = in_range("node.nvlink.nvswitch_chips", spec.nvlink.switch_chips, 1, max_gpus_per_node))
    return p;
  if (auto p = check_nvlink_domain(spec))
    return p;
  if (auto p = positive("node.pcie.gbytes_per_s", spec.pcie.bytes_per_s))
    return p;
  if (auto p = non_negative("node.pcie.latency_us", spec.pcie.latency_s))
    return p;
  if (auto p = in_range("node.pcie.switches", spec.pcie.switches_per_node, 1, spec.gpus_per_node))
    return p;
  if (spec.gpus_per_node % spec.pcie.switches_per_node != 0)
    return SpecProblem{"node.pcie.switches", std::to_string(spec.pcie.switches_per_node) + " does not divide " +
                                                 std::to_string(spec.gpus_per_node) +
                                                 " GPUs per node (expected a divisor of node.gpus)"};
  if (auto p = in_range("node.nics.count", spec.nic.count, 0, max_nics_per_node))
    return p;
  if (auto p = positive("node.nics.gbits_per_s", spec.nic.bytes_per_s))
    return p;
  if (auto p = non_negative("node.nics.latency_us", spec.nic.latency_s))
    return p;
  if (auto p = check_rail_map(spec))
    return p;
  if (auto p = check_fabric(spec))
    return p;
  if (auto p = fraction("nccl.nvlink_efficiency", spec.nccl.nvlink_efficiency))
    return p;
  if (auto p = fraction("nccl.pcie_efficiency", spec.nccl.pcie_efficiency))
    return p;
  return fraction("nccl.net_efficiency", spec.nccl.net_efficiency);
}

void require_consistent(const ClusterSpec& spec)
{
  if (const std::optional<SpecProblem> problem = find_spec_problem(spec))
    throw InputError("cluster '" + spec.name + "': " + problem->field + ": " + problem->message);
}

} // namespace gputwin::topo
