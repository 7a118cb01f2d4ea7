#include "gputwin/topologies/cluster_spec.hpp"

#include "builtin_clusters.hpp"
#include "cluster_spec_check.hpp"
#include "field_reader.hpp"
#include "yaml_overrides.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/json_writer.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>

namespace gputwin::topo {

namespace {

constexpr double giga = 1e9;
constexpr double micro = 1e-6;

std::string file_stem(const std::string& path)
{
  const size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = name.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

// The cluster file `name_or_path` names: a built-in name first, then a readable file.
config::YamlFile open_cluster_file(const std::string& name_or_path, std::string& source)
{
  for (const BuiltinCluster& builtin : builtin_clusters()) {
    if (builtin.name != name_or_path)
      continue;
    source = "<built-in " + name_or_path + ">";
    return config::parse_yaml_text(std::string(builtin.yaml), name_or_path + ".yaml (built-in)");
  }
  if (std::ifstream(name_or_path).good()) {
    source = name_or_path;
    return config::load_yaml_file(name_or_path);
  }
  throw InputError("--cluster: unknown cluster '" + name_or_path + "' (expected one of " + builtin_cluster_names() +
                   ", or a cluster .yaml file)");
}

// The fields of the file, in SI units (schema: topologies/README.md). Checks each field's type and sign; the
// rules between fields are find_spec_problem's.
ClusterSpec read_fields(const FieldReader& in, const std::string& default_name)
{
  ClusterSpec spec;
  in.mapping("", {"name", "nodes", "gpu", "node", "fabric", "nccl"});
  spec.name = in.has("name") ? in.text("name") : default_name;
  spec.nodes = in.positive_integer("nodes");

  in.mapping("gpu", {"kind", "generation", "peak_bf16_tflops", "peak_fp8_tflops", "peak_fp4_tflops", "hbm_gbytes",
                     "hbm_gbytes_per_s"});
  spec.gpu.kind = in.text("gpu.kind");
  const std::string generation = in.text("gpu.generation");
  if (const std::optional<GpuGeneration> g = parse_gpu_generation(generation))
    spec.gpu.generation = *g;
  else
    throw InputError(in.where("gpu.generation") + ": expected ampere, hopper, blackwell or cpu, got '" + generation + "'");
  spec.gpu.peak_bf16_flops = in.positive_number("gpu.peak_bf16_tflops") * 1e12;
  // Optional: absent means the GPU has no FP8 tensor cores, and --fp8 plans are refused on it.
  if (in.has("gpu.peak_fp8_tflops"))
    spec.gpu.peak_fp8_flops = in.positive_number("gpu.peak_fp8_tflops") * 1e12;
  // Optional: absent means no FP4 tensor cores, and --precision nvfp4 plans are refused on it.
  if (in.has("gpu.peak_fp4_tflops"))
    spec.gpu.peak_fp4_flops = in.positive_number("gpu.peak_fp4_tflops") * 1e12;
  const double hbm_gbytes = in.positive_number("gpu.hbm_gbytes");
  if (hbm_gbytes > 1e9) // bytes must fit 64 bits: a billion GB per GPU is already far beyond any device
    throw InputError(in.where("gpu.hbm_gbytes") + ": expected at most 1e9 GB per GPU, got " +
                     json_number(hbm_gbytes));
  spec.gpu.hbm_bytes = std::llround(hbm_gbytes * giga);
  spec.gpu.hbm_bytes_per_s = in.positive_number("gpu.hbm_gbytes_per_s") * giga;

  in.mapping("node", {"gpus", "host_cores", "host_issue_scale", "nvlink", "pcie", "nics"});
  spec.gpus_per_node = in.positive_integer("node.gpus");
  if (in.has("node.host_cores"))
    spec.host_cores = in.positive_integer("node.host_cores");
  if (in.has("node.host_issue_scale"))
    spec.host_issue_scale = in.positive_number("node.host_issue_scale");
  in.mapping("node.nvlink", {"gbytes_per_s", "latency_us", "nvswitch_chips", "domain_gpus", "segments"});
  spec.nvlink.bytes_per_s = in.positive_number("node.nvlink.gbytes_per_s") * giga;
  spec.nvlink.latency_s = in.non_negative_number("node.nvlink.latency_us") * micro;
  spec.nvlink.switch_chips = in.positive_integer("node.nvlink.nvswitch_chips");
  // Optional: absent, the NVLink domain is the node; a rack-scale domain (NVL72) spans several nodes (trays).
  if (in.has("node.nvlink.domain_gpus"))
    spec.nvlink.domain_gpus = in.positive_integer("node.nvlink.domain_gpus");
  if (in.has("node.nvlink.segments"))
    spec.nvlink.segments = in.boolean("node.nvlink.segments");
  in.mapping("node.pcie", {"gbytes_per_s", "latency_us", "switches"});
  spec.pcie.bytes_per_s = in.positive_number("node.pcie.gbytes_per_s") * giga;
  spec.pcie.latency_s = in.non_negative_number("node.pcie.latency_us") * micro;
  spec.pcie.switches_per_node = in.positive_integer("node.pcie.switches");
  in.mapping("node.nics", {"count", "gbits_per_s", "latency_us", "gpus"});
  spec.nic.count = in.non_negative_integer("node.nics.count");
  spec.nic.bytes_per_s = in.positive_number("node.nics.gbits_per_s") * giga / 8;
  spec.nic.latency_s = in.non_negative_number("node.nics.latency_us") * micro;
  if (spec.nic.count > 0) // a node without NICs needs no rail map
    spec.nic.gpus = in.integer_lists("node.nics.gpus");

  in.mapping("fabric", {"levels", "switch_radix", "oversubscription", "rail_optimized", "link_gbits_per_s",
                        "switch_latency_us", "planes", "adaptive_routing"});
  spec.fabric.levels = in.positive_integer("fabric.levels");
  spec.fabric.switch_radix = in.positive_integer("fabric.switch_radix");
  // One ratio (the leaves') or one per tier: [leaf down:up, aggregation down:up].
  const std::vector<double> oversubscription = in.positive_numbers("fabric.oversubscription", 2);
  spec.fabric.oversubscription = oversubscription[0];
  if (oversubscription.size() > 1)
    spec.fabric.spine_oversubscription = oversubscription[1];
  spec.fabric.rail_optimized = in.boolean("fabric.rail_optimized");
  spec.fabric.link_bytes_per_s = in.positive_number("fabric.link_gbits_per_s") * giga / 8;
  spec.fabric.switch_latency_s = in.non_negative_number("fabric.switch_latency_us") * micro;
  if (in.has("fabric.planes")) // optional: one plane, static routing (InfiniBand's) by default
    spec.fabric.planes = in.positive_integer("fabric.planes");
  if (in.has("fabric.adaptive_routing"))
    spec.fabric.adaptive_routing = in.boolean("fabric.adaptive_routing");

  in.mapping("nccl", {"nvlink_efficiency", "pcie_efficiency", "net_efficiency", "channels_intra_node",
                      "channels_inter_node", "host_call_us", "host_launch_us_per_gpu", "kernel_us", "channel_us",
                      "channel_net_step_us", "tree_correction", "userbuffers_latency_us", "nvls", "collnet", "ll",
                      "ll128", "simple"});
  spec.nccl.nvlink_efficiency = in.positive_number("nccl.nvlink_efficiency");
  spec.nccl.pcie_efficiency = in.positive_number("nccl.pcie_efficiency");
  spec.nccl.net_efficiency = in.positive_number("nccl.net_efficiency");
  // The latency and channel fields are optional: a file without them gets NcclSpec's defaults (A100 figures
  // measured from nccl-tests, topologies/README.md), so older cluster files keep working.
  const auto optional = [&](const std::string& path, auto read, auto& field) {
    if (in.has(path))
      field = read(path);
  };
  const auto positive_integer = [&](const std::string& path) { return in.positive_integer(path); };
  const auto microseconds = [&](const std::string& path) { return in.non_negative_number(path) * micro; };
  const auto gbytes_per_s = [&](const std::string& path) { return in.positive_number(path) * giga; };
  optional("nccl.channels_intra_node", positive_integer, spec.nccl.channels_intra_node);
  optional("nccl.channels_inter_node", positive_integer, spec.nccl.channels_inter_node);
  optional("nccl.host_call_us", microseconds, spec.nccl.host_call_s);
  optional("nccl.host_launch_us_per_gpu", microseconds, spec.nccl.host_launch_s_per_gpu);
  optional("nccl.kernel_us", microseconds, spec.nccl.kernel_s);
  optional("nccl.channel_us", microseconds, spec.nccl.channel_s);
  optional("nccl.channel_net_step_us", microseconds, spec.nccl.channel_net_step_s);
  optional("nccl.userbuffers_latency_us", microseconds, spec.nccl.userbuffers_latency_s);
  optional("nccl.tree_correction", [&](const std::string& path) { return in.boolean(path); },
           spec.nccl.tree_correction);
  optional("nccl.nvls", [&](const std::string& path) { return in.boolean(path); }, spec.nccl.nvls);
  optional("nccl.collnet", [&](const std::string& path) { return in.boolean(path); }, spec.nccl.collnet);
  const auto protocol = [&](const std::string& name, NcclProtocolSpec& p) {
    const std::string at = "nccl." + name;
    if (!in.has(at))
      return;
    in.mapping(at, {"base_us", "nvlink_step_us", "net_step_us", "channel_gbytes_per_s"});
    optional(at + ".base_us", microseconds, p.base_latency_s);
    optional(at + ".nvlink_step_us", microseconds, p.nvlink_step_s);
    optional(at + ".net_step_us", microseconds, p.net_step_s);
    optional(at + ".channel_gbytes_per_s", gbytes_per_s, p.channel_bytes_per_s);
  };
  protocol("ll", spec.nccl.ll);
  protocol("ll128", spec.nccl.ll128);
  protocol("simple", spec.nccl.simple);
  return spec;
}

} // namespace

std::string gpu_family(const std::string& kind)
{
  std::string family = kind.substr(0, kind.find('-'));
  for (char& c : family)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return family;
}

std::string builtin_cluster_names()
{
  std::string names;
  for (const BuiltinCluster& builtin : builtin_clusters())
    names += (names.empty() ? "" : ", ") + std::string(builtin.name);
  return names;
}

namespace {

// node.nvlink.segments: the job's domains are its segments -- the greatest divisor of its trays that fits a
// domain (NvlinkSpec::segments).
void allocate_segments(ClusterSpec& spec)
{
  const int per_domain = spec.nodes_per_domain();
  if (!spec.nvlink.segments || per_domain <= 1)
    return;
  int segment = std::min(spec.nodes, per_domain);
  while (spec.nodes % segment != 0)
    --segment;
  spec.nvlink.domain_gpus = segment * spec.gpus_per_node;
}

} // namespace

ClusterSpec load_cluster(const std::string& name_or_path, int nodes, const std::vector<std::string>& set_overrides)
{
  if (nodes < 0)
    throw InputError("--nodes: expected a positive number of nodes, got " + std::to_string(nodes));
  std::string source;
  config::YamlFile file = open_cluster_file(name_or_path, source);
  std::vector<std::string> set_keys;
  for (const std::string& text : set_overrides) {
    const SetOverride override = parse_set_override(text);
    apply_set_override(file.root, override);
    set_keys.push_back(override.key);
  }
  const FieldReader in(std::move(file), set_keys);
  ClusterSpec spec = read_fields(in, file_stem(name_or_path));
  spec.source = source;
  if (nodes > 0)
    spec.nodes = nodes;
  if (const std::optional<SpecProblem> problem = find_spec_problem(spec)) {
    const bool from_nodes_flag = nodes > 0 && problem->field == "nodes";
    throw InputError((from_nodes_flag ? "--nodes" : in.where(problem->field)) + ": " + problem->message);
  }
  allocate_segments(spec);
  return spec;
}

ClusterSpec load_cluster(const ClusterRequest& request, int nodes)
{
  ClusterSpec spec = load_cluster(request.name_or_path, nodes > 0 ? nodes : request.nodes, request.set_overrides);
  spec.faults = request.faults;
  return spec;
}

} // namespace gputwin::topo
