#include "gputwin/sim/iteration_report.hpp"

#include "gputwin/models/expert_load.hpp"
#include "gputwin/models/flops.hpp"
#include "gputwin/models/rank_layout.hpp"
#include <algorithm>
#include <stdexcept>
#include <type_traits>

namespace gputwin::sim {

IterationReport iteration_report(const GptConfig& model, const ParallelPlan& plan, const topo::ClusterSpec& cluster,
                                 const IterationResult& result)
{
  IterationReport r;
  const int64_t batch = plan.effective_global_batch();
  r.iteration_time_s = result.iteration_time_s;
  r.gpus = plan.gpus();
  r.nodes = cluster.nodes;
  r.tokens_per_s = static_cast<double>(batch * model.seq_len) / r.iteration_time_s;
  r.model_flops = model_flops_per_iteration(model, batch);
  // Megatron-Core's recompute modules rerun what recompute_module_flops counts, on top of no recompute.
  const Recompute counted =
      plan.recompute == Recompute::Selective && !plan.recompute_modules.empty() ? Recompute::None : plan.recompute;
  const RecomputeModuleFlops reruns = recompute_module_flops(model, batch, plan);
  r.hardware_flops = hardware_flops_per_iteration(model, batch, counted, plan.attention, plan.cp) + reruns.total;
  const double bf16_peak = cluster.gpu.peak_bf16_flops;
  // The linear GEMMs' peak: FP8 for fp8 and mxfp8 (block-scaled FP8 runs at the FP8 rate), FP4 for nvfp4.
  const double linear_peak = plan.precision == GemmPrecision::Nvfp4 ? cluster.gpu.peak_fp4_flops
                             : plan.quantized()                     ? cluster.gpu.peak_fp8_flops
                                                                    : bf16_peak;
  r.mfu_precision = to_string(plan.precision);
  r.mfu_peak_flops = linear_peak;
  r.mfu = flops_utilization(r.model_flops, r.iteration_time_s, r.gpus, r.mfu_peak_flops);
  r.mfu_bf16 = flops_utilization(r.model_flops, r.iteration_time_s, r.gpus, bf16_peak);
  const double quantized_flops =
      plan.quantized() ? linear_flops_per_iteration(model, batch, counted) + reruns.linear : 0.0;
  r.hfu = flops_utilization(r.hardware_flops - quantized_flops, r.iteration_time_s, r.gpus, bf16_peak) +
          (plan.quantized() ? flops_utilization(quantized_flops, r.iteration_time_s, r.gpus, linear_peak) : 0.0);
  if (!result.stages.empty()) {
    const StageTimes& first = result.stages.front();
    // Idle inside the pipeline's window (the first forward anywhere to the last backward anywhere): a later
    // stage's own window leaves out the fill before its first forward and the drain after its last backward.
    // Without a pipeline (pp 1) each program's own window: a straggler's program is not a stage to wait for.
    double window_start_s = first.pipeline_start_s, window_end_s = first.pipeline_end_s;
    for (const StageTimes& t : result.stages)
      if (plan.pp > 1 && t.pipeline_compute_s > 0) {
        window_start_s = std::min(window_start_s, t.pipeline_start_s);
        window_end_s = std::max(window_end_s, t.pipeline_end_s);
      }
    auto idle_fraction = [&](const StageTimes& t) {
      // Never below zero: without a pipeline the busy time fills the window up to rounding (-1e-16).
      return t.pipeline_compute_s > 0
                 ? std::max(0.0, (window_end_s - window_start_s - t.pipeline_compute_s - t.pipeline_comm_s) /
                                     t.pipeline_compute_s)
                 : 0;
    };
    // The busiest stage: the most compute inside its pipeline window (ties, within rounding, to the earlier one).
    size_t busiest = 0;
    for (size_t i = 1; plan.pp > 1 && i < result.stages.size(); ++i)
      if (result.stages[i].pipeline_compute_s > result.stages[busiest].pipeline_compute_s * (1 + 1e-9))
        busiest = i;
    r.bubble_fraction = idle_fraction(result.stages[busiest]);
    r.bubble_stage = busiest < result.programs.size() ? rank_coord(plan, result.programs[busiest].rank).stage
                                                      : static_cast<int64_t>(busiest);
    r.first_stage_idle_fraction = idle_fraction(first);
    r.compute_s = first.compute_s;
    r.exposed_comm_s = first.exposed_comm_s;
  }
  r.simulated_events = result.executed_ops + result.simulated_flows;
  r.simulated_programs = static_cast<int64_t>(result.programs.size());
  if (model.moe.enabled()) {
    const ExpertLoads loads = expert_loads(model, plan);
    r.moe = true;
    r.moe_exchange_s = result.stages.empty() ? 0 : result.stages.front().moe_exchange_s;
    r.moe_max_rank_load = loads.max_rank_load();
    r.moe_expert_maxvio = loads.max_expert_violation();
    r.moe_dropped_fraction = loads.dropped_fraction;
    r.moe_slowest_ep_index = loads.slowest_rank();
    r.moe_slowest_rank = expert_global_rank(plan, {0, 0, r.moe_slowest_ep_index, 0});
  }
  return r;
}

namespace {

// Every member of the report once, by name, for the writer and the reader alike.
template <typename Report, typename Visit>
void visit_members(Report& r, Visit&& visit)
{
  visit("iteration_time_s", r.iteration_time_s);
  visit("tokens_per_s", r.tokens_per_s);
  visit("model_flops", r.model_flops);
  visit("hardware_flops", r.hardware_flops);
  visit("mfu", r.mfu);
  visit("mfu_precision", r.mfu_precision);
  visit("mfu_peak_flops_per_gpu", r.mfu_peak_flops);
  visit("mfu_bf16", r.mfu_bf16);
  visit("hfu", r.hfu);
  visit("bubble_fraction", r.bubble_fraction);
  visit("bubble_stage", r.bubble_stage);
  visit("first_stage_idle_fraction", r.first_stage_idle_fraction);
  visit("compute_time_s", r.compute_s);
  visit("exposed_communication_s", r.exposed_comm_s);
  visit("gpus", r.gpus);
  visit("nodes", r.nodes);
  visit("simulated_events", r.simulated_events);
  visit("simulated_programs", r.simulated_programs);
}

// The MoE members, written (and read) as the object "moe" only for a model with experts.
template <typename Report, typename Visit>
void visit_moe_members(Report& r, Visit&& visit)
{
  visit("exchange_s", r.moe_exchange_s);
  visit("max_rank_load", r.moe_max_rank_load);
  visit("expert_maxvio", r.moe_expert_maxvio);
  visit("dropped_fraction", r.moe_dropped_fraction);
  visit("slowest_ep_index", r.moe_slowest_ep_index);
  visit("slowest_rank", r.moe_slowest_rank);
}

} // namespace

void write_moe_members(JsonWriter& json, const IterationReport& report)
{
  visit_moe_members(report, [&](const char* name, const auto& value) { json.field(name, value); });
}

void write_iteration_report(JsonWriter& json, const IterationReport& report)
{
  json.begin_object();
  visit_members(report, [&](const char* name, const auto& value) { json.field(name, value); });
  if (report.moe) {
    json.key("moe");
    json.begin_object();
    write_moe_members(json, report);
    json.end_object();
  }
  json.end_object();
}

namespace {

// Reads member `name` of `object` into `value` (a string, a double or an integer).
template <typename T>
void read_member(const traces::JsonValue& object, const char* name, T& value)
{
  const traces::JsonValue* member = object.find(name);
  if (member == nullptr)
    throw std::runtime_error(std::string("iteration report: member '") + name + "' missing");
  if constexpr (std::is_same_v<T, std::string>) {
    value = member->text;
  } else if constexpr (std::is_same_v<T, double>) {
    const std::optional<double> v = member->as_double();
    if (!v)
      throw std::runtime_error(std::string("iteration report: member '") + name + "' is not a number");
    value = *v;
  } else {
    const std::optional<int64_t> v = member->as_int64();
    if (!v)
      throw std::runtime_error(std::string("iteration report: member '") + name + "' is not an integer");
    value = *v;
  }
}

} // namespace

IterationReport read_iteration_report(const traces::JsonValue& root)
{
  IterationReport report;
  visit_members(report, [&](const char* name, auto& value) { read_member(root, name, value); });
  if (const traces::JsonValue* moe = root.find("moe")) {
    report.moe = true;
    visit_moe_members(report, [&](const char* name, auto& value) { read_member(*moe, name, value); });
  }
  return report;
}

} // namespace gputwin::sim
