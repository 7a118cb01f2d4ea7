#include "gputwin/config/gpu_model_yaml.hpp"

#include "gputwin/common/yaml_fields.hpp"
#include "gputwin/models/gemm_table.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/kernel_class.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>

namespace gputwin::config {

namespace {

// Text for a comment: one line.
std::string comment_text(std::string text)
{
  for (char& c : text)
    if (c == '\n' || c == '\r')
      c = ' ';
  return text;
}

void line(std::ostream& out, const std::string& key, const std::string& value, const std::string& comment)
{
  std::string text = key + ": " + value;
  if (!comment.empty()) {
    text.resize(std::max<size_t>(text.size() + 1, 32), ' ');
    text += "# " + comment;
  }
  out << text << "\n";
}

std::string require_string(const YamlFile& file, const YAML::Node& map, const std::string& key)
{
  const std::optional<std::string> value = optional_string(file, map, key);
  if (!value)
    throw InputError(location(file, map) + ": missing field '" + key + "' (expected a string)");
  if (value->empty())
    throw InputError(location(file, map[key]) + ": " + key + ": expected a non-empty string");
  return *value;
}

int32_t require_int32(const YamlFile& file, const YAML::Node& map, const std::string& key)
{
  const int64_t value = require_positive_integer(file, map, key);
  if (value > std::numeric_limits<int32_t>::max())
    throw InputError(location(file, map[key]) + ": " + key + ": expected a positive integer below 2^31, got " +
                     std::to_string(value));
  return static_cast<int32_t>(value);
}

// The optional list `key` of mappings; checks each item is a mapping with only `allowed` keys.
std::vector<YAML::Node> optional_list(const YamlFile& file, const YAML::Node& root, const std::string& key,
                                      std::initializer_list<const char*> allowed)
{
  const YAML::Node node = root[key];
  std::vector<YAML::Node> items;
  if (!node)
    return items;
  if (!node.IsSequence())
    throw InputError(location(file, node) + ": " + key + ": expected a list, got a " + node_kind(node));
  for (const YAML::Node& item : node) {
    if (!item.IsMap())
      throw InputError(location(file, item) + ": " + key + ": expected each item to be a mapping, got a " +
                       node_kind(item));
    reject_unknown_keys(file, item, allowed);
    items.push_back(item);
  }
  return items;
}

// The table a model file's `gemm_table` names: "builtin:NAME", or a CSV path relative to the model file.
std::shared_ptr<const GemmTable> resolve_gemm_table(const YamlFile& file, const YAML::Node& node,
                                                     const std::string& ref)
{
  const std::string builtin_prefix = "builtin:";
  if (ref.rfind(builtin_prefix, 0) == 0) {
    std::shared_ptr<const GemmTable> table = builtin_gemm_table(ref.substr(builtin_prefix.size()));
    if (!table)
      throw InputError(location(file, node) + ": gemm_table: expected builtin:" + builtin_gemm_table_names() +
                       " or a CSV path, got '" + ref + "'");
    return table;
  }
  const std::filesystem::path path = std::filesystem::path(ref).is_absolute()
                                         ? std::filesystem::path(ref)
                                         : std::filesystem::path(file.path).parent_path() / ref;
  try {
    return std::make_shared<const GemmTable>(GemmTable::load(path.string()));
  } catch (const InputError& e) {
    throw InputError(location(file, node) + ": gemm_table: " + e.what());
  }
}

} // namespace

void write_calibration_yaml(std::ostream& out, const Calibration& calibration,
                            const std::vector<std::string>& trace_paths)
{
  const GpuComputeModel& g = calibration.gpu;
  out << "# gputwin GPU compute model, fitted by `gputwin calibrate` to the measured op durations of "
      << trace_paths.size() << " trace" << (trace_paths.size() == 1 ? "" : "s") << ":\n";
  for (const std::string& path : trace_paths)
    out << "#   " << comment_text(path) << "\n";
  out << "# GEMMs: time = max(flops / (peak_flops_per_s x e_gemm), bytes / streaming bandwidth) + kernel_overhead_s,\n"
         "#   e_gemm = gemm_efficiency x wave quantization (gemm_tile_m x gemm_tile_n tiles over the\n"
         "#   multiprocessors) x k / (k + gemm_k_half); with a gemm_table, gemm_efficiency x the table's FLOP/s\n"
         "#   relative to its best (the curve scaled to the table beyond its grid). Streaming bandwidth: the\n"
         "#   elementwise class's. Memory-bound ops: kernel_overhead_s + class overhead_s + bytes /\n"
         "#   (hbm_bytes_per_s x memory_efficiency x class relative_efficiency); classes not listed: 1 and 0.\n"
         "# Peak, bandwidth, multiprocessors and tiles are the nominal values the fit was made against; the\n"
         "# efficiencies are relative to them and may exceed 1 (a CPU against its nominal peak).\n"
         "# Method: sim/README.md, section \"Calibration\".\n";
  for (const std::string& note : calibration.notes)
    out << "# note: " << comment_text(note) << "\n";
  line(out, "gpu_kind", yaml_quoted(g.gpu_kind), "");
  line(out, "source", yaml_quoted(g.source), "");
  line(out, "peak_flops_per_s", yaml_number(g.peak_flops), "nominal");
  if (g.peak_fp8_flops > 0) // absent: no FP8 tensor cores (FP8 GEMMs are refused)
    line(out, "peak_fp8_flops_per_s", yaml_number(g.peak_fp8_flops), "nominal; FP8 GEMMs, efficiency of half the depth");
  if (g.peak_fp4_flops > 0) // absent: no FP4 tensor cores (NVFP4 GEMMs are refused)
    line(out, "peak_fp4_flops_per_s", yaml_number(g.peak_fp4_flops), "nominal; NVFP4 GEMMs, efficiency of a quarter of the depth");
  line(out, "hbm_bytes_per_s", yaml_number(g.hbm_bytes_per_s), "nominal");
  line(out, "multiprocessors", std::to_string(g.multiprocessors), "nominal");
  line(out, "gemm_tile_m", yaml_number(g.gemm_tile_m), "nominal, elements");
  line(out, "gemm_tile_n", yaml_number(g.gemm_tile_n), "nominal, elements");
  line(out, "gemm_efficiency", yaml_number(g.gemm_efficiency), "fitted");
  line(out, "gemm_k_half", yaml_number(g.gemm_k_half), "fitted, inner-dimension elements");
  line(out, "memory_efficiency", yaml_number(g.memory_efficiency), "fitted");
  line(out, "kernel_overhead_s", yaml_number(g.kernel_overhead_s), "fitted");
  if (g.grouped_gemm_kernel_s > 0) // absent: grouped GEMMs cost what one batched kernel does
    line(out, "grouped_gemm_kernel_s", yaml_number(g.grouped_gemm_kernel_s), "per kernel of a grouped GEMM (experts)");
  if (g.fp8_split_accumulator_slowdown != 1) // absent: FP8 gradient GEMMs as fast as the forward's
    line(out, "fp8_split_accumulator_slowdown", yaml_number(g.fp8_split_accumulator_slowdown),
         "FP8 dgrad/wgrad GEMMs with the split accumulator (Hopper)");
  if (!g.gemm_table_ref.empty())
    line(out, "gemm_table", yaml_quoted(g.gemm_table_ref), "measured GEMM FLOP/s: builtin:NAME or a CSV path");
  if (g.attention_throughput != nullptr)
    line(out, "attention_throughput", yaml_quoted("builtin:" + g.attention_throughput->name),
         "measured fused-attention FLOP/s over sequence length");
  if (!g.memory_classes.empty()) {
    out << "# Memory-bound kernel classes (relative to memory_efficiency; overhead_s on top of kernel_overhead_s).\n"
           "memory_classes:\n";
    for (const auto& [kernel_class, params] : g.memory_classes)
      out << "  - {class: " << yaml_quoted(to_string(kernel_class))
          << ", relative_efficiency: " << yaml_number(params.relative_efficiency)
          << ", overhead_s: " << yaml_number(params.overhead_s) << "}\n";
  }
  if (g.comm_interference.enabled) {
    const CommInterferenceParams& ci = g.comm_interference;
    out << "# Overlapped NCCL communication slows the kernels it overlaps: channels x sms_per_channel SMs taken\n"
           "# from GEMMs, hbm_bytes_per_comm_byte x bytes sent and received taken from HBM (sim/README.md,\n"
           "# \"Compute-communication interference\"). Absent: no interference.\ncomm_interference:\n";
    out << "  sms_per_channel: " << yaml_number(ci.sms_per_channel) << "\n";
    out << "  p2p_channels: " << ci.p2p_channels << "\n";
    out << "  hbm_bytes_per_comm_byte: " << yaml_number(ci.hbm_bytes_per_comm_byte) << "\n";
    out << "  source: " << yaml_quoted(ci.source) << "\n";
  }
  if (!calibration.fits.empty()) {
    out << "# Fit errors per op class, then per op name (|modelled - measured| / measured; seconds summed over\n"
           "# the ops). Informational: not part of the model.\nfit:\n";
    for (const OpClassFit& f : calibration.fits)
      out << "  - {op_class: " << yaml_quoted(f.op_class) << ", ops: " << f.ops
          << ", mean_abs_relative_error: " << yaml_number(f.mean_abs_relative_error)
          << ", max_abs_relative_error: " << yaml_number(f.max_abs_relative_error)
          << ", measured_s: " << yaml_number(f.measured_s) << ", modelled_s: " << yaml_number(f.modelled_s) << "}\n";
  }
  if (!calibration.collectives.empty()) {
    out << "# Communication per kind and group size: time = latency_s + bytes / bytes_per_s (bytes_per_s 0: a\n"
           "# single size, latency alone). Durations as measured, waiting for peers included.\ncollectives:\n";
    for (const CollectiveFit& c : calibration.collectives)
      out << "  - {op: " << yaml_quoted(to_string(c.op)) << ", ranks: " << c.ranks << ", samples: " << c.samples
          << ", latency_s: " << yaml_number(c.latency_s) << ", bytes_per_s: " << yaml_number(c.bytes_per_s)
          << ", mean_abs_relative_error: " << yaml_number(c.mean_abs_relative_error) << "}\n";
  }
}

Calibration load_calibration_yaml(const std::string& path)
{
  const YamlFile file = load_yaml_file(path);
  const YAML::Node& root = file.root;
  reject_unknown_keys(file, root,
                      {"gpu_kind", "source", "peak_flops_per_s", "peak_fp8_flops_per_s", "peak_fp4_flops_per_s",
                       "hbm_bytes_per_s", "multiprocessors", "gemm_tile_m",
                       "gemm_tile_n", "gemm_efficiency", "gemm_k_half", "memory_efficiency", "kernel_overhead_s",
                       "grouped_gemm_kernel_s", "fp8_split_accumulator_slowdown", "gemm_table",
                       "attention_throughput", "memory_classes", "comm_interference", "fit", "collectives",
                       "framework"}); // framework: read by --framework (framework_yaml.hpp)
  Calibration result;
  GpuComputeModel& g = result.gpu;
  g.gpu_kind = require_string(file, root, "gpu_kind");
  g.source = optional_string(file, root, "source").value_or("");
  g.peak_flops = require_number(file, root, "peak_flops_per_s", 0, true);
  if (root["peak_fp8_flops_per_s"])
    g.peak_fp8_flops = require_number(file, root, "peak_fp8_flops_per_s", 0, true);
  if (root["peak_fp4_flops_per_s"])
    g.peak_fp4_flops = require_number(file, root, "peak_fp4_flops_per_s", 0, true);
  g.hbm_bytes_per_s = require_number(file, root, "hbm_bytes_per_s", 0, true);
  g.multiprocessors = require_int32(file, root, "multiprocessors");
  g.gemm_tile_m = require_number(file, root, "gemm_tile_m", 0, true);
  g.gemm_tile_n = require_number(file, root, "gemm_tile_n", 0, true);
  g.gemm_efficiency = require_number(file, root, "gemm_efficiency", 0, true);
  g.gemm_k_half = require_number(file, root, "gemm_k_half", 0, false);
  g.memory_efficiency = require_number(file, root, "memory_efficiency", 0, true);
  g.kernel_overhead_s = require_number(file, root, "kernel_overhead_s", 0, false);
  if (root["grouped_gemm_kernel_s"]) // optional; absent = 0 (files written before grouped GEMMs had a cost)
    g.grouped_gemm_kernel_s = require_number(file, root, "grouped_gemm_kernel_s", 0, false);
  if (root["fp8_split_accumulator_slowdown"]) // optional; absent = 1
    g.fp8_split_accumulator_slowdown = require_number(file, root, "fp8_split_accumulator_slowdown", 0, true);
  if (const std::optional<std::string> ref = optional_string(file, root, "gemm_table")) {
    if (ref->empty())
      throw InputError(location(file, root["gemm_table"]) + ": gemm_table: expected builtin:" +
                       builtin_gemm_table_names() + " or a CSV path, got an empty string");
    g.gemm_table = resolve_gemm_table(file, root["gemm_table"], *ref);
    g.gemm_table_ref = *ref;
  }
  if (const std::optional<std::string> ref = optional_string(file, root, "attention_throughput")) {
    const std::string prefix = "builtin:";
    g.attention_throughput =
        ref->rfind(prefix, 0) == 0 ? builtin_attention_throughput(ref->substr(prefix.size())) : nullptr;
    if (g.attention_throughput == nullptr)
      throw InputError(location(file, root["attention_throughput"]) +
                       ": attention_throughput: expected builtin:h100-cudnn, got '" + *ref + "'");
  }
  for (const YAML::Node& item :
       optional_list(file, root, "memory_classes", {"class", "relative_efficiency", "overhead_s"})) {
    const std::string name = require_string(file, item, "class");
    const std::optional<KernelClass> kernel_class = parse_kernel_class(name);
    if (!kernel_class || *kernel_class == KernelClass::Gemm)
      throw InputError(location(file, item["class"]) + ": class: expected a memory-bound class (" +
                       kernel_class_names() + " but gemm), got '" + name + "'");
    const MemoryClassParams params{require_number(file, item, "relative_efficiency", 0, true),
                                   require_number(file, item, "overhead_s", 0, false)};
    if (!g.memory_classes.emplace(*kernel_class, params).second)
      throw InputError(location(file, item["class"]) + ": class: '" + name + "' listed twice");
  }
  if (const YAML::Node node = root["comm_interference"]) {
    if (!node.IsMap())
      throw InputError(location(file, node) + ": comm_interference: expected a mapping, got a " + node_kind(node));
    reject_unknown_keys(file, node,
                        {"enabled", "sms_per_channel", "p2p_channels", "hbm_bytes_per_comm_byte", "source"});
    CommInterferenceParams& ci = g.comm_interference;
    ci.enabled = optional_boolean(file, node, "enabled", true);
    ci.sms_per_channel = require_number(file, node, "sms_per_channel", 0, false);
    ci.p2p_channels = require_int32(file, node, "p2p_channels");
    ci.hbm_bytes_per_comm_byte = require_number(file, node, "hbm_bytes_per_comm_byte", 0, false);
    ci.source = optional_string(file, node, "source").value_or("");
  }
  for (const YAML::Node& item : optional_list(
           file, root, "fit",
           {"op_class", "ops", "mean_abs_relative_error", "max_abs_relative_error", "measured_s", "modelled_s"}))
    result.fits.push_back({require_string(file, item, "op_class"), require_positive_integer(file, item, "ops"),
                           require_number(file, item, "mean_abs_relative_error", 0, false),
                           require_number(file, item, "max_abs_relative_error", 0, false),
                           require_number(file, item, "measured_s", 0, false),
                           require_number(file, item, "modelled_s", 0, false)});
  for (const YAML::Node& item :
       optional_list(file, root, "collectives",
                     {"op", "ranks", "samples", "latency_s", "bytes_per_s", "mean_abs_relative_error"})) {
    const std::string op_text = require_string(file, item, "op");
    const std::optional<CollectiveOp> op = parse_collective_op(op_text);
    if (!op)
      throw InputError(location(file, item["op"]) + ": op: expected " + collective_op_names() + ", got '" + op_text +
                       "'");
    result.collectives.push_back(
        {*op, require_int32(file, item, "ranks"), require_positive_integer(file, item, "samples"),
         require_number(file, item, "latency_s", 0, false), require_number(file, item, "bytes_per_s", 0, false),
         require_number(file, item, "mean_abs_relative_error", 0, false)});
  }
  return result;
}

GpuComputeModel load_gpu_model_yaml(const std::string& path)
{
  return load_calibration_yaml(path).gpu;
}

} // namespace gputwin::config
