#include "gputwin/config/framework_yaml.hpp"

#include "gputwin/common/input_error.hpp"

#include <filesystem>

namespace gputwin::config {

namespace {

constexpr const char* number_fields[] = {"kernel_issue_s",     "gemm_issue_s",      "collective_issue_s",
                                         "p2p_issue_s",        "microbatch_issue_s", "iteration_issue_s",
                                         "launch_latency_s"};

double* number_field(FrameworkProfile& p, const std::string& key)
{
  if (key == "kernel_issue_s")
    return &p.kernel_issue_s;
  if (key == "gemm_issue_s")
    return &p.gemm_issue_s;
  if (key == "collective_issue_s")
    return &p.collective_issue_s;
  if (key == "p2p_issue_s")
    return &p.p2p_issue_s;
  if (key == "microbatch_issue_s")
    return &p.microbatch_issue_s;
  if (key == "iteration_issue_s")
    return &p.iteration_issue_s;
  return &p.launch_latency_s;
}

} // namespace

FrameworkProfile read_framework_profile(const YamlFile& file, const YAML::Node& map)
{
  if (!map.IsMap())
    throw InputError(location(file, map) + ": framework: expected a mapping, got a " + node_kind(map));
  reject_unknown_keys(file, map,
                      {"name", "source", "kernel_issue_s", "gemm_issue_s", "collective_issue_s", "p2p_issue_s",
                       "microbatch_issue_s", "iteration_issue_s", "launch_latency_s", "sync_after_p2p",
                       "sync_before_optimizer", "overlap_p2p_interleaved", "cuda_graphs", "graph_launch_s",
                       "unfused_softmax_extra_ops", "sync_at_moe_routing", "align_grad_reduce",
                       "expert_gemm_issue_s"});
  FrameworkProfile p;
  p.name = optional_string(file, map, "name").value_or(std::filesystem::path(file.path).stem().string());
  p.source = optional_string(file, map, "source").value_or(file.path);
  for (const char* key : number_fields)
    *number_field(p, key) = require_number(file, map, key, 0, false);
  p.sync_after_p2p = optional_boolean(file, map, "sync_after_p2p", false);
  p.sync_before_optimizer = optional_boolean(file, map, "sync_before_optimizer", false);
  p.overlap_p2p_interleaved = optional_boolean(file, map, "overlap_p2p_interleaved", false);
  p.sync_at_moe_routing = optional_boolean(file, map, "sync_at_moe_routing", false);
  p.align_grad_reduce = optional_boolean(file, map, "align_grad_reduce", false);
  p.cuda_graphs = optional_boolean(file, map, "cuda_graphs", false);
  if (map["graph_launch_s"])
    p.graph_launch_s = require_number(file, map, "graph_launch_s", 0, false);
  if (map["expert_gemm_issue_s"])
    p.expert_gemm_issue_s = require_number(file, map, "expert_gemm_issue_s", 0, false);
  if (map["unfused_softmax_extra_ops"]) {
    const double ops = require_number(file, map, "unfused_softmax_extra_ops", 0, false);
    if (ops != static_cast<double>(static_cast<int>(ops)) || ops > 64)
      throw InputError(location(file, map["unfused_softmax_extra_ops"]) +
                       ": unfused_softmax_extra_ops: expected a whole number of ops from 0 to 64");
    p.unfused_softmax_extra_ops = static_cast<int>(ops);
  }
  return p;
}

void write_framework_profile(std::ostream& out, const FrameworkProfile& p, const std::string& indent)
{
  auto line = [&](const std::string& key, const std::string& value, const char* comment) {
    std::string text = indent + key + ": " + value;
    text.resize(std::max<size_t>(text.size() + 1, indent.size() + 34), ' ');
    out << text << "# " << comment << "\n";
  };
  line("name", yaml_quoted(p.name), "framework profile");
  line("source", yaml_quoted(p.source), "where the figures come from");
  line("kernel_issue_s", yaml_number(p.kernel_issue_s), "host seconds to issue one memory-bound kernel");
  line("gemm_issue_s", yaml_number(p.gemm_issue_s), "... one GEMM or fused attention kernel");
  line("collective_issue_s", yaml_number(p.collective_issue_s), "... one NCCL collective");
  line("p2p_issue_s", yaml_number(p.p2p_issue_s), "... one pipeline send or receive");
  line("microbatch_issue_s", yaml_number(p.microbatch_issue_s), "once per micro-batch step of the schedule");
  line("iteration_issue_s", yaml_number(p.iteration_issue_s), "once per iteration, before the optimizer");
  line("launch_latency_s", yaml_number(p.launch_latency_s), "launch call -> earliest start on the GPU");
  line("sync_after_p2p", p.sync_after_p2p ? "true" : "false", "host waits for the GPU after each p2p transfer");
  line("sync_before_optimizer", p.sync_before_optimizer ? "true" : "false", "... before the optimizer");
  line("overlap_p2p_interleaved", p.overlap_p2p_interleaved ? "true" : "false",
       "no p2p sync in the interleaved schedule (overlap_p2p_comm)");
  line("sync_at_moe_routing", p.sync_at_moe_routing ? "true" : "false",
       "host waits for each MoE layer's routed token counts (Megatron-Core's dispatchers)");
  line("align_grad_reduce", p.align_grad_reduce ? "true" : "false",
       "a chunk's gradient reduction started by the schedule, pipeline rank steps late");
  line("cuda_graphs", p.cuda_graphs ? "true" : "false", "per-layer CUDA graphs: one launch per layer step");
  line("graph_launch_s", yaml_number(p.graph_launch_s), "host seconds to launch one layer's graph");
  line("expert_gemm_issue_s", yaml_number(p.expert_gemm_issue_s),
       "... one expert's GEMM of a grouped GEMM (0: gemm_issue_s)");
  line("unfused_softmax_extra_ops", std::to_string(p.unfused_softmax_extra_ops),
       "ops beyond the fused softmax kernel where it does not fit");
}

bool names_framework_file(const std::string& name_or_path)
{
  return name_or_path.find('/') != std::string::npos ||
         (name_or_path.size() > 5 && name_or_path.rfind(".yaml") == name_or_path.size() - 5);
}

FrameworkProfile load_framework_profile(const std::string& name_or_path, const std::string& flag)
{
  if (!names_framework_file(name_or_path))
    return builtin_framework_profile(name_or_path, flag);
  const YamlFile file = load_yaml_file(name_or_path);
  if (const YAML::Node section = file.root["framework"])
    return read_framework_profile(file, section);
  return read_framework_profile(file, file.root);
}

} // namespace gputwin::config
