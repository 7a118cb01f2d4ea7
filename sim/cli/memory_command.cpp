// `gputwin memory`: per-GPU memory of the busiest pipeline stage, from the analytic models.
#include "commands.hpp"
#include "report_json.hpp"
#include "search_core.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/parameter_count.hpp"
#include "gputwin/models/pipeline_schedule.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/traces/json_writer.hpp"

#include <cstdio>
#include <iostream>
#include <limits>

namespace gputwin::cli {

namespace {

constexpr double bytes_per_gib = 1024.0 * 1024.0 * 1024.0;

std::string gib(int64_t bytes)
{
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", static_cast<double>(bytes) / bytes_per_gib);
  return text;
}

// Bytes as an integer and in GiB: both columns wide enough for any int64 (19 digits, 8.6e9 GiB), so extreme
// plans keep the table's columns.
void print_row(std::ostream& out, const std::string& label, int64_t bytes)
{
  char line[160];
  std::snprintf(line, sizeof line, "  %-34s %20lld %14s\n", label.c_str(), static_cast<long long>(bytes),
                gib(bytes).c_str());
  out << line;
}

// "fits" or "does not fit", with the headroom: all in GiB (the GPU's capacity too, which cluster files give in GB).
std::string verdict(const StageMemory& m, const topo::ClusterSpec& cluster)
{
  const int64_t capacity = cluster.gpu.hbm_bytes;
  const int64_t headroom = capacity - m.total_bytes;
  char text[320];
  if (headroom >= 0)
    std::snprintf(text, sizeof text, "fits: %s GiB of the %s GiB of one %s (%s), headroom %s GiB (%.1f %%)",
                  gib(m.total_bytes).c_str(), gib(capacity).c_str(), cluster.gpu.kind.c_str(), cluster.name.c_str(),
                  gib(headroom).c_str(), 100.0 * static_cast<double>(headroom) / static_cast<double>(capacity));
  else
    std::snprintf(text, sizeof text, "does not fit: %s GiB needed, the %s GiB of one %s (%s) short by %s GiB",
                  gib(m.total_bytes).c_str(), gib(capacity).c_str(), cluster.gpu.kind.c_str(), cluster.name.c_str(),
                  gib(-headroom).c_str());
  return text;
}

void print_table(std::ostream& out, const GptConfig& model, const ParallelPlan& plan, const StageMemory& m,
                 const topo::ClusterSpec& cluster)
{
  const int64_t vocab = padded_vocab(model, plan.tp);
  char params[32];
  std::snprintf(params, sizeof params, "%.2f", static_cast<double>(model_parameters(model, plan.tp)) / 1e9);
  out << "model  " << model.name << ": h " << model.hidden << ", a " << model.heads << ", L " << model.layers << ", s "
      << model.seq_len << ", v " << model.vocab;
  if (vocab != model.vocab)
    out << " (padded to " << vocab << ")";
  out << "; " << params << " B parameters\n";
  out << "plan   " << describe_plan(plan) << "\n";
  const StageActivations& a = m.activations;
  out << "busiest pipeline stage: " << m.stage << " of " << plan.pp << " (" << stage_layers(model, plan, m.stage)
      << " layers; at peak " << a.chunks_in_flight << " micro-batch" << (plan.chunks > 1 ? " x chunk pairs" : "es")
      << " in flight = " << a.chunks_in_flight * a.layers_per_chunk << " layers' worth of activations)\n\n";
  out << "  per GPU                                           bytes            GiB\n";
  print_row(out,
            plan.attention == AttentionKernel::Flash ? "activations per layer (flash)"
                                                     : "activations per layer (Table 2)",
            a.bytes_per_layer);
  print_row(out, "activations of the layers", a.layer_bytes);
  print_row(out, "activations, embedding + output", a.embedding_bytes + a.output_bytes);
  print_row(out, "activations stored", a.total_bytes);
  print_row(out, "recompute workspace (transient)", m.recompute_workspace_bytes);
  print_row(out, "weights (bf16)", m.state.weight_bytes);
  print_row(out, "gradients (fp32)", m.state.gradient_bytes);
  print_row(out, plan.zero_stage ? "optimizer states (fp32, ZeRO-1)" : "optimizer states (fp32)",
            m.state.optimizer_bytes);
  print_row(out, "total", m.total_bytes);
  print_row(out, "GPU memory (" + cluster.gpu.kind + ")", cluster.gpu.hbm_bytes);
  out << "\nverdict: " << verdict(m, cluster) << "\n";
}

void print_json(std::ostream& out, const GptConfig& model, const ParallelPlan& plan, const StageMemory& m,
                const topo::ClusterSpec& cluster)
{
  traces::JsonWriter json(out);
  json.begin_object();
  write_model_json(json, model);
  write_plan_json(json, plan);
  write_cluster_json(json, cluster);
  json.field("gpus", plan.gpus());
  json.field("stage", m.stage);
  json.field("parameters_per_gpu", m.state.parameters);
  json.field("activation_bytes_per_layer", m.activations.bytes_per_layer);
  json.field("activation_layers_in_flight", m.activations.chunks_in_flight * m.activations.layers_per_chunk);
  json.field("activation_bytes", m.activations.total_bytes);
  json.field("recompute_workspace_bytes", m.recompute_workspace_bytes);
  json.field("weight_bytes", m.state.weight_bytes);
  json.field("gradient_bytes", m.state.gradient_bytes);
  json.field("optimizer_bytes", m.state.optimizer_bytes);
  json.field("total_bytes", m.total_bytes);
  json.field("gpu_memory_bytes", cluster.gpu.hbm_bytes);
  json.field("headroom_bytes", cluster.gpu.hbm_bytes - m.total_bytes); // negative: short by that much
  json.field("fits", m.total_bytes <= cluster.gpu.hbm_bytes);
  json.end_object();
}

} // namespace

int run_memory(const std::vector<std::string>& args, std::ostream& out)
{
  ArgParser parser(
      "gputwin memory",
      "Per-GPU memory of the busiest pipeline stage under a parallel plan: activations stored for\n"
      "backward (Korthikanti et al. 2022, Table 2, times the micro-batches the schedule keeps in\n"
      "flight), the recompute workspace, and mixed-precision Adam model state (2 + 4 + 12 bytes per\n"
      "parameter, optimizer sharded over dp with --zero 1). With --attention flash the attention core\n"
      "stores the fp32 log-sum-exp and the dropout RNG state instead of its s x s tensors.\n"
      "Ends with the verdict against the cluster's GPU: fits (with the headroom) or does not fit (short by how\n"
      "much), everything in GiB (bytes in --json).\n\n"
      "example: gputwin memory --model gpt3-175b --tp 8 --pp 8 --micro-batch 1 --sp --recompute selective");
  add_model_flags(parser);
  add_plan_flags(parser);
  topo::add_cluster_flags(parser);
  parser.add_section("output");
  parser.add_switch("--json", "machine-readable output (bytes as integers; with the model, plan and cluster)");
  const ParsedArgs parsed = parser.parse(args);
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  const GptConfig model = model_from_flags(parsed);
  const ParallelPlan plan = read_plan(parsed, model);
  topo::ClusterSpec cluster = topo::read_cluster(parsed);
  check_fp8_supported(plan, cluster);
  // As simulate: without --nodes the cluster is sized to the plan; --nodes is checked, not ignored.
  const int64_t nodes_needed = (plan.gpus() + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
  if (parsed.has("--nodes") && plan.gpus() > cluster.gpus())
    throw InputError("--nodes: the plan needs tp x pp x dp = " + std::to_string(plan.gpus()) + " GPUs but " +
                     std::to_string(cluster.nodes) + " nodes of " + cluster.name + " have " +
                     std::to_string(cluster.gpus()) + " (expected --nodes " + std::to_string(nodes_needed) +
                     " or more)");
  if (!parsed.has("--nodes") && nodes_needed != cluster.nodes && nodes_needed <= std::numeric_limits<int>::max())
    cluster = topo::read_cluster(parsed, static_cast<int>(nodes_needed));
  const StageMemory busiest = busiest_stage_memory(model, plan);
  for (const std::string& note : plan_notes(parsed, plan))
    std::cerr << "gputwin memory: note: " << note << "\n";
  if (parsed.has("--json"))
    print_json(out, model, plan, busiest, cluster);
  else
    print_table(out, model, plan, busiest, cluster);
  return 0;
}

} // namespace gputwin::cli
