#include "gputwin/sim/memory_output.hpp"

#include "gputwin/common/json_writer.hpp"
#include "gputwin/models/parameter_count.hpp"
#include "gputwin/models/pipeline_schedule.hpp"
#include "gputwin/sim/report_json.hpp"

#include <cstdio>
#include <string>

namespace gputwin::sim {

namespace {

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

// "fits" or "does not fit" once the reserve is kept, with the headroom: all in GiB (the GPU's capacity too, which
// cluster files give in GB).
std::string verdict(const StageMemory& m, int64_t reserve, const topo::ClusterSpec& cluster)
{
  const int64_t capacity = cluster.gpu.hbm_bytes;
  const int64_t needed = m.total_bytes + reserve;
  const int64_t headroom = capacity - needed;
  char text[400];
  if (headroom >= 0)
    std::snprintf(text, sizeof text,
                  "fits: %s GiB (%s allocated + %s reserve) of the %s GiB of one %s (%s), headroom %s GiB (%.1f %%)",
                  gib(needed).c_str(), gib(m.total_bytes).c_str(), gib(reserve).c_str(), gib(capacity).c_str(),
                  cluster.gpu.kind.c_str(), cluster.name.c_str(), gib(headroom).c_str(),
                  100.0 * static_cast<double>(headroom) / static_cast<double>(capacity));
  else
    std::snprintf(text, sizeof text,
                  "does not fit: %s GiB needed (%s allocated + %s reserve), the %s GiB of one %s (%s) short by %s GiB",
                  gib(needed).c_str(), gib(m.total_bytes).c_str(), gib(reserve).c_str(), gib(capacity).c_str(),
                  cluster.gpu.kind.c_str(), cluster.name.c_str(), gib(-headroom).c_str());
  return text;
}

} // namespace

void print_memory_table(std::ostream& out, const GptConfig& model, const ParallelPlan& plan, const StageMemory& m,
                        const MemoryReserve& reserve, const topo::ClusterSpec& cluster)
{
  const int64_t vocab = padded_vocab(model, plan.tp);
  char params[32];
  std::snprintf(params, sizeof params, "%.2f", static_cast<double>(model_parameters(model, plan.tp)) / 1e9);
  out << "model  " << model.name << ": h " << model.hidden << ", a " << model.heads << ", L " << model.layers << ", s "
      << model.seq_len << ", v " << model.vocab;
  if (vocab != model.vocab)
    out << " (padded to " << vocab << ")";
  out << "; " << params << " B parameters";
  if (model.moe.enabled()) {
    char moe[160];
    std::snprintf(moe, sizeof moe, " (%.2f B activated per token; %lld experts top-%lld, ep %lld, etp %lld, edp %lld)",
                  static_cast<double>(activated_parameters(model, plan.tp)) / 1e9,
                  static_cast<long long>(model.moe.experts), static_cast<long long>(model.moe.topk),
                  static_cast<long long>(plan.ep), static_cast<long long>(plan.expert_tp()),
                  static_cast<long long>(plan.expert_dp()));
    out << moe;
  }
  if (model.moe.mtp_layers > 0) {
    char mtp[64];
    std::snprintf(mtp, sizeof mtp, " + %.2f B in MTP modules", static_cast<double>(mtp_parameters(model)) / 1e9);
    out << mtp;
  }
  out << "\n";
  out << "plan   " << describe_plan(plan) << "\n";
  const StageActivations& a = m.activations;
  out << "busiest pipeline stage: " << m.stage << " of " << plan.pp << " (" << stage_layers(model, plan, m.stage)
      << " layers; at peak " << a.chunks_in_flight << " micro-batch" << (plan.chunks > 1 ? " x chunk pairs" : "es")
      << " in flight = " << peak_layers_in_flight(model, plan, m.stage) << " layers' worth of activations)\n\n";
  out << "  per GPU                                           bytes            GiB\n";
  print_row(out,
            megatron_core_te_memory(plan) ? "activations per layer (TE, flash)" : "activations per layer (Table 2)",
            a.bytes_per_layer);
  print_row(out, "activations of the layers", a.layer_bytes);
  print_row(out, "activations, embedding + output", a.embedding_bytes + a.output_bytes);
  print_row(out, "activations stored", a.total_bytes);
  print_row(out, "recompute workspace (transient)", m.recompute_workspace_bytes);
  if (megatron_core_te_memory(plan))
    print_row(out, "backward workspace (transient)", m.backward_workspace_bytes);
  print_row(out,
            plan.quantized() && plan.fp8_param_gather ? "weights (bf16; layers " + to_string(plan.precision) + ")"
                                                      : std::string("weights (bf16)"),
            m.state.weight_bytes);
  if (plan.fp8())
    print_row(out, "FP8 weight caches (TE)", m.state.fp8_cache_bytes);
  else if (plan.quantized())
    print_row(out, to_string(plan.precision) + " weight caches (TE, scales included)", m.state.fp8_cache_bytes);
  if (megatron_core_te_memory(plan))
    print_row(out, "wgrad placeholders (TE)", m.state.wgrad_placeholder_bytes);
  print_row(out, plan.grad_reduce_bf16 ? "gradients (bf16)" : "gradients (fp32)", m.state.gradient_bytes);
  print_row(out,
            plan.zero_stage ? "optimizer states (fp32, ZeRO-" + std::to_string(plan.zero_stage) + ")"
                            : std::string("optimizer states (fp32)"),
            m.state.optimizer_bytes);
  if (plan.zero_stage >= 3) { // the units gathered at once (the current and the prefetched)
    print_row(out, "gathered weights (transient)", m.state.gathered_weight_bytes);
    print_row(out, "gathered gradients (transient)", m.state.gathered_gradient_bytes);
  }
  print_row(out, "total allocated", m.total_bytes);
  const int64_t reserve_bytes = reserve.bytes(m.total_bytes);
  print_row(out, "reserve (" + reserve.framework + ")", reserve_bytes);
  print_row(out, "GPU memory (" + cluster.gpu.kind + ")", cluster.gpu.hbm_bytes);
  out << "  reserve: " << reserve.source << "\n";
  out << "\nverdict: " << verdict(m, reserve_bytes, cluster) << "\n";
}

void write_memory_json(std::ostream& out, const GptConfig& model, const ParallelPlan& plan, const StageMemory& m,
                       const MemoryReserve& reserve, const topo::ClusterSpec& cluster)
{
  const int64_t reserve_bytes = reserve.bytes(m.total_bytes);
  JsonWriter json(out);
  json.begin_object();
  write_model_json(json, model);
  write_plan_json(json, plan);
  write_cluster_json(json, cluster);
  json.field("gpus", plan.gpus());
  json.field("stage", m.stage);
  json.field("total_parameters", model_parameters(model, plan.tp));
  json.field("activated_parameters", activated_parameters(model, plan.tp));
  json.field("mtp_parameters", mtp_parameters(model));
  json.field("parameters_per_gpu", m.state.parameters);
  const StageParameters split = stage_parameter_split(model, plan, m.stage);
  json.field("dense_parameters_per_gpu", split.dense);
  json.field("expert_parameters_per_gpu", split.expert);
  json.field("activation_bytes_per_layer", m.activations.bytes_per_layer);
  json.field("activation_layers_in_flight", peak_layers_in_flight(model, plan, m.stage));
  json.field("activation_bytes", m.activations.total_bytes);
  json.field("recompute_workspace_bytes", m.recompute_workspace_bytes);
  json.field("backward_workspace_bytes", m.backward_workspace_bytes);
  json.field("weight_bytes", m.state.weight_bytes);
  json.field("fp8_cache_bytes", m.state.fp8_cache_bytes);
  json.field("wgrad_placeholder_bytes", m.state.wgrad_placeholder_bytes);
  json.field("gradient_bytes", m.state.gradient_bytes);
  json.field("optimizer_bytes", m.state.optimizer_bytes);
  json.field("gathered_weight_bytes", m.state.gathered_weight_bytes);     // ZeRO-3 / FSDP: the units gathered
  json.field("gathered_gradient_bytes", m.state.gathered_gradient_bytes); // at once, before their reduce-scatter
  json.field("total_bytes", m.total_bytes); // the allocated peak
  json.field("reserve_bytes", reserve_bytes);
  json.field("reserve_source", reserve.source);
  json.field("gpu_memory_bytes", cluster.gpu.hbm_bytes);
  // negative: short by that much
  json.field("headroom_bytes", cluster.gpu.hbm_bytes - m.total_bytes - reserve_bytes);
  json.field("fits", m.total_bytes + reserve_bytes <= cluster.gpu.hbm_bytes);
  json.end_object();
}

} // namespace gputwin::sim
