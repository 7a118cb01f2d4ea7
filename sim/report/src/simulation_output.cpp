#include "gputwin/sim/simulation_output.hpp"

#include "gputwin/common/json_writer.hpp"
#include "gputwin/sim/link_report_output.hpp"
#include "gputwin/sim/report_json.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <string>

namespace gputwin::sim {

namespace {


// The stragglers beside the cluster they slow down (only when some were given: reports without them unchanged).
void write_stragglers_json(JsonWriter& json, const SimulationReport& r)
{
  if (r.stragglers.empty())
    return;
  json.key("stragglers");
  json.begin_object();
  json.key("slow_gpus");
  json.begin_array();
  for (const SlowGpu& g : r.stragglers.gpus) {
    json.begin_object();
    json.field("rank", g.rank);
    json.field("factor", g.factor);
    json.end_object();
  }
  json.end_array();
  json.key("slow_nodes");
  json.begin_array();
  for (const SlowNode& n : r.stragglers.nodes) {
    json.begin_object();
    json.field("node", n.node);
    json.field("factor", n.factor);
    json.end_object();
  }
  json.end_array();
  json.key("gpu_speeds"); // every rank not at full speed: GPU factor x node factor
  json.begin_array();
  for (const auto& [rank, speed] : r.rank_speeds) {
    json.begin_object();
    json.field("rank", static_cast<int64_t>(rank));
    json.field("speed", speed);
    json.end_object();
  }
  json.end_array();
  json.field("simulated_programs", r.run.simulated_programs);
  json.end_object();
}


// The MoE figures (iteration_report.hpp), with the busiest link kind when the flows were logged.
void write_moe_json(JsonWriter& json, const sim::IterationReport& run, const LinkReport* links)
{
  json.key("moe");
  json.begin_object();
  sim::write_moe_members(json, run);
  if (links && links->busiest_kind)
    json.field("busiest_link_kind", sim::to_string(*links->busiest_kind));
  json.end_object();
}

} // namespace

void write_simulation_json(std::ostream& out, const GptConfig& model, const ParallelPlan& plan,
                           const topo::ClusterSpec& cluster, const FrameworkProfile& framework,
                           const WorkloadOptions& options, const RunSizeEstimate& estimate, const SimulationReport& r,
                           const LinkReportJson& links, const LinkReport* logged)
{
  JsonWriter json(out);
  json.begin_object();
  sim::write_model_json(json, model);
  sim::write_plan_json(json, plan);
  sim::write_cluster_json(json, cluster);
  write_stragglers_json(json, r);
  json.field("overlap_grad_reduce", options.overlap_grad_reduce);
  json.field("overlap_param_gather", options.overlap_param_gather);
  json.field("tp_comm_overlap", options.tp_comm_overlap);
  if (plan.ep > 1) // a plan with expert parallelism: the EP all-to-all overlap (combined 1F1B steps) or not
    json.field("overlap_moe_expert_parallel_comm", options.moe_a2a_overlap);
  if (options.delay_wgrad_compute)
    json.field("delay_wgrad_compute", true);
  if (options.moe_shared_expert_overlap)
    json.field("moe_shared_expert_overlap", true);
  json.field("framework", framework.name);
  json.field("cuda_graphs", framework.cuda_graphs);
  json.field("overlap_p2p_comm", framework.overlap_p2p_interleaved); // interleaved p2p without host sync
  json.field("align_grad_reduce", framework.align_grad_reduce); // the schedule starts the gradient reductions
  json.field("nodes", r.run.nodes);
  json.field("gpus", r.run.gpus);
  json.field("iteration_time_s", r.run.iteration_time_s);
  json.field("tokens_per_s", r.run.tokens_per_s);
  json.field("model_flops", r.run.model_flops);
  json.field("hardware_flops", r.run.hardware_flops);
  json.field("mfu", r.run.mfu);
  json.field("mfu_precision", r.run.mfu_precision);
  json.field("mfu_peak_flops_per_gpu", r.run.mfu_peak_flops);
  json.field("mfu_bf16", r.run.mfu_bf16);
  json.field("hfu", r.run.hfu);
  json.field("bubble_fraction", r.run.bubble_fraction);
  json.field("bubble_stage", r.run.bubble_stage);
  json.field("first_stage_idle_fraction", r.run.first_stage_idle_fraction);
  json.field("compute_time_s", r.run.compute_s);
  json.field("exposed_communication_s", r.run.exposed_comm_s);
  json.field("peak_memory_bytes", r.peak_memory_bytes);
  json.field("peak_memory_stage", r.peak_memory_stage);
  json.field("gpu_memory_bytes", cluster.gpu.hbm_bytes);
  json.field("fits_gpu_memory", r.peak_memory_bytes <= cluster.gpu.hbm_bytes);
  json.field("simulated_events", r.run.simulated_events);
  json.key("resource_estimate"); // what the guard estimated before the run (--max-memory)
  json.begin_object();
  json.field("ops", static_cast<int64_t>(std::llround(estimate.ops)));
  json.field("flows", static_cast<int64_t>(std::llround(estimate.flows)));
  json.field("gpu_pairs", static_cast<int64_t>(std::llround(estimate.gpu_pairs)));
  json.field("memory_bytes", static_cast<int64_t>(std::llround(estimate.memory_bytes)));
  json.end_object();
  json.field("sim_wall_time_s", r.sim_wall_time_s);
  if (r.run.moe)
    write_moe_json(json, r.run, logged);
  if (links.report)
    sim::write_link_report_json(json, *links.graph, *links.report);
  json.end_object();
}

void print_simulation_table(std::ostream& out, const GptConfig& model, const ParallelPlan& plan,
                            const topo::ClusterSpec& cluster, const SimulationReport& r, const LinkReport* logged)
{
  char line[256];
  out << "model    " << model.name << " (h " << model.hidden << ", a " << model.heads << ", L " << model.layers
      << ", s " << model.seq_len << ", v " << model.vocab << ")\n";
  out << "plan     " << describe_plan(plan) << "\n";
  std::snprintf(line, sizeof line, "cluster  %s: %lld nodes, %lld GPUs used of %d\n", cluster.name.c_str(),
                static_cast<long long>(r.run.nodes), static_cast<long long>(r.run.gpus), cluster.gpus());
  out << line;
  if (!r.stragglers.empty()) {
    std::string slow; // runs of consecutive ranks at one speed as a range: "32-39 at 0.9"
    for (auto it = r.rank_speeds.begin(); it != r.rank_speeds.end();) {
      auto last = it;
      while (std::next(last) != r.rank_speeds.end() && std::next(last)->first == last->first + 1 &&
             std::next(last)->second == it->second)
        ++last;
      if (last == it)
        std::snprintf(line, sizeof line, "%s%d at %.3g", slow.empty() ? "" : ", ", it->first, it->second);
      else
        std::snprintf(line, sizeof line, "%s%d-%d at %.3g", slow.empty() ? "" : ", ", it->first, last->first,
                      it->second);
      slow += line;
      it = std::next(last);
    }
    out << "slow     " << (slow.empty() ? "none (every factor 1)" : "ranks " + slow + " of normal speed") << "; "
        << r.run.simulated_programs << " programs simulated\n";
  }
  out << "\n";
  auto row = [&](const char* label, const std::string& value) {
    std::snprintf(line, sizeof line, "  %-34s %s\n", label, value.c_str());
    out << line;
  };
  // Values beyond a fixed-point column (a 1e-300 GB/s link: 1e300 s) switch to an exponent, so each row stays
  // one short line.
  auto fmt = [](const char* f, double v) {
    char text[64];
    std::string format = f;
    if (!std::isfinite(v) || (v != 0 && (std::fabs(v) >= 1e12 || std::fabs(v) < 1e-4)))
      format = "%.4g" + format.substr(std::min(format.find(' '), format.size())); // the unit kept
    std::snprintf(text, sizeof text, format.c_str(), v);
    return std::string(text);
  };
  row("iteration time", fmt("%.4f s", r.run.iteration_time_s));
  row("throughput", fmt("%.0f tokens/s", r.run.tokens_per_s));
  row("model FLOPs / iteration", fmt("%.4g", r.run.model_flops));
  row("hardware FLOPs / iteration", fmt("%.4g", r.run.hardware_flops));
  // MFU: model FLOPs (dense attention, the papers' convention) against the peak of the GEMMs' precision; HFU:
  // the FLOPs executed, each against its own precision's peak.
  row("MFU", fmt("%.1f %%", 100 * r.run.mfu) + " of " + r.run.mfu_precision + " peak " + fmt("%.0f", r.run.mfu_peak_flops / 1e12) +
                 " TF/s");
  if (r.run.mfu_precision != "bf16")
    row("MFU of bf16 peak", fmt("%.1f %%", 100 * r.run.mfu_bf16));
  row("HFU", fmt("%.1f %%", 100 * r.run.hfu) + " (executed FLOPs)");
  // The bubble of the stage the others wait for; a lighter first stage idles longer by the stages' imbalance.
  const std::string bubble_label = "pipeline bubble (stage " + std::to_string(r.run.bubble_stage) + ", busiest)";
  row(bubble_label.c_str(), fmt("%.3f of compute", r.run.bubble_fraction));
  if (r.run.bubble_stage != 0)
    row("idle in pipeline (stage 0)", fmt("%.3f of compute", r.run.first_stage_idle_fraction));
  row("compute (stage 0)", fmt("%.4f s", r.run.compute_s));
  row("exposed communication (stage 0)", fmt("%.4f s", r.run.exposed_comm_s));
  row("peak memory (busiest GPU)", fmt("%.2f GiB", static_cast<double>(r.peak_memory_bytes) / (1 << 30)) + " (stage " +
                                       std::to_string(r.peak_memory_stage) + ")");
  if (r.run.moe) {
    row("MoE token exchange (stage 0)", fmt("%.4f s", r.run.moe_exchange_s) + " exposed");
    row("MoE busiest EP rank load", fmt("%.3f", r.run.moe_max_rank_load) + " x balanced (slowest: EP " +
                                        std::to_string(r.run.moe_slowest_ep_index) + ", rank " +
                                        std::to_string(r.run.moe_slowest_rank) + ")");
    row("MoE expert MaxVio", fmt("%.3f", r.run.moe_expert_maxvio) +
                                 (r.run.moe_dropped_fraction > 0
                                      ? fmt(" (%.2f %% of routed tokens dropped)", 100 * r.run.moe_dropped_fraction)
                                      : std::string()));
    if (logged && logged->busiest_kind)
      row("busiest link kind", sim::to_string(*logged->busiest_kind));
  }
  row("simulated events", std::to_string(r.run.simulated_events));
  row("simulator wall time", fmt("%.2f s", r.sim_wall_time_s));
}

} // namespace gputwin::sim
