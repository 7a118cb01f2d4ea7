#include "gputwin/sim/simulated_search.hpp"

#include "gputwin/common/byte_text.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/common/json_writer.hpp"
#include "gputwin/common/progress.hpp"
#include "gputwin/models/plan_metadata.hpp"
#include "gputwin/sim/isolated_run.hpp"
#include "gputwin/sim/iteration_executor.hpp"
#include "gputwin/sim/report_json.hpp"
#include "gputwin/sim/work_estimate.hpp"
#include "gputwin/traces/json_value.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace gputwin::sim {

int64_t search_max_tp(int64_t gpus, const topo::ClusterSpec& cluster)
{
  return std::min<int64_t>(gpus, cluster.domain_gpus());
}

void check_whole_nodes(int64_t gpus, const topo::ClusterSpec& cluster)
{
  if (gpus > cluster.gpus_per_node && gpus % cluster.gpus_per_node != 0)
    throw InputError("--gpus: " + std::to_string(gpus) + " is not a multiple of " + cluster.name + "'s " +
                     std::to_string(cluster.gpus_per_node) + " GPUs per node (expected whole nodes)");
}

PlanEnumeration enumerate_search_plans(const GptConfig& model, int64_t gpus, int64_t global_batch,
                                       const topo::ClusterSpec& cluster, const SearchSpace& space, int64_t top,
                                       double max_work_items)
{
  const int64_t max_tp = search_max_tp(gpus, cluster);
  check_work(estimate_search_work(model, gpus, global_batch, max_tp, space, top), max_work_items, "the search");
  PlanEnumeration plans = enumerate_plans(model, gpus, global_batch, max_tp, cluster.gpu.hbm_bytes, space);
  if (plans.shapes == 0)
    throw InputError("--gpus: no parallel plan of " + model.name + " (heads " + std::to_string(model.heads) +
                     ", layers " + std::to_string(model.layers) + ") splits over " + std::to_string(gpus) +
                     " GPUs with global batch " + std::to_string(global_batch) +
                     " (tp must divide the heads, pp the layers, dp the global batch)");
  if (plans.fitting.empty())
    throw InputError("no plan fits: the smallest, " + describe_plan(plans.smallest.plan) + ", needs " +
                     format_gib_number(static_cast<double>(plans.smallest.peak_memory_bytes)) +
                     " GiB per GPU but the " + cluster.gpu.kind + " has " +
                     format_gib_number(static_cast<double>(cluster.gpu.hbm_bytes)) +
                     " GiB (more GPUs, a smaller global batch, or --attention flash)");
  return plans;
}

std::vector<SimulatedCandidate> rank_and_simulate(const topo::ClusterSpec& cluster, const topo::ClusterGraph& graph,
                                                  const GptConfig& model, const std::vector<PlanCandidate>& fitting,
                                                  const GpuComputeModel& gpu, const FrameworkProfile& framework,
                                                  int jobs, size_t top, const char* command, bool show_progress,
                                                  size_t* ruled_out)
{
  ProgressBar estimating("estimating plans", show_progress);
  const std::vector<PlanEstimate> estimates = rank_plans(
      graph, model, fitting, gpu, framework, jobs, [&](size_t done, size_t total) { estimating.update(done, total); },
      top);
  estimating.finish();
  if (ruled_out)
    *ruled_out = static_cast<size_t>(
        std::count_if(estimates.begin(), estimates.end(), [](const PlanEstimate& e) { return !e.estimated; }));

  // The best `top` in full, each in a process of its own (SimGrid builds one platform per process), its report
  // coming back as JSON.
  const size_t confirmed = std::min(estimates.size(), top);
  ProgressBar simulating("simulating the best plans", show_progress);
  simulating.update(0, confirmed);
  size_t finished = 0;
  IsolatedRunCallbacks callbacks;
  callbacks.on_idle = [&] { simulating.tick(); };
  callbacks.on_done = [&](size_t, const std::string&) { simulating.update(++finished, confirmed); };
  callbacks.describe = [&](size_t i) {
    return std::string("the simulation of ") + describe_plan(estimates[i].candidate.plan) + " (" + command + ")";
  };
  const std::vector<std::string> reports = run_isolated(
      confirmed, 1,
      [&](size_t i) {
        const PlanCandidate& candidate = estimates[i].candidate;
        const IterationResult result = SimgridExecutor().run(
            graph, make_workload(model, candidate.plan, with_framework_options(candidate.options, framework)), gpu,
            framework, {}, {});
        std::ostringstream out;
        JsonWriter json(out, 0);
        write_iteration_report(json, iteration_report(model, candidate.plan, cluster, result));
        return out.str();
      },
      callbacks);
  std::vector<SimulatedCandidate> ranked;
  for (size_t i = 0; i < confirmed; ++i)
    ranked.push_back(SimulatedCandidate{estimates[i], read_iteration_report(traces::parse_json(reports[i]))});
  std::stable_sort(ranked.begin(), ranked.end(), [](const SimulatedCandidate& a, const SimulatedCandidate& b) {
    return a.report.iteration_time_s < b.report.iteration_time_s;
  });
  return ranked;
}

std::string simulated_candidate_json(const GptConfig& model, const SimulatedCandidate& c)
{
  Metadata plan;
  write_plan_metadata(model, c.estimate.candidate.plan, plan);
  std::ostringstream out;
  JsonWriter json(out, 0);
  json.begin_object();
  json.key("plan");
  json.begin_object();
  for (const auto& [key, value] : plan)
    json.field(key, value);
  json.end_object();
  json.key("overlaps");
  json.begin_object();
  write_overlaps_json(json, c.estimate.candidate.options);
  json.end_object();
  json.field("peak_memory_bytes", c.estimate.candidate.peak_memory_bytes);
  json.field("estimated_iteration_time_s", c.estimate.iteration_time_s);
  json.key("report");
  write_iteration_report(json, c.report);
  json.end_object();
  return out.str();
}

SimulatedCandidate parse_simulated_candidate_json(const std::string& text)
{
  const traces::JsonValue root = traces::parse_json(text);
  auto member = [&](const traces::JsonValue& object, const char* name) -> const traces::JsonValue& {
    const traces::JsonValue* v = object.find(name);
    if (v == nullptr)
      throw std::runtime_error(std::string("simulated candidate: member '") + name + "' missing");
    return *v;
  };
  SimulatedCandidate c;
  Metadata plan;
  const traces::JsonValue& plan_json = member(root, "plan");
  for (size_t i = 0; i < plan_json.keys.size(); ++i)
    plan[plan_json.keys[i]] = plan_json.items[i].text;
  c.estimate.candidate.plan = read_plan_metadata(plan, "simulated candidate").plan;
  const traces::JsonValue& overlaps = member(root, "overlaps");
  c.estimate.candidate.options.tp_comm_overlap = member(overlaps, "tp_comm_overlap").boolean;
  c.estimate.candidate.options.overlap_grad_reduce = member(overlaps, "overlap_grad_reduce").boolean;
  c.estimate.candidate.options.overlap_param_gather = member(overlaps, "overlap_param_gather").boolean;
  c.estimate.candidate.peak_memory_bytes = member(root, "peak_memory_bytes").as_int64().value_or(-1);
  c.estimate.iteration_time_s = member(root, "estimated_iteration_time_s").as_double().value_or(-1);
  c.report = read_iteration_report(member(root, "report"));
  return c;
}

} // namespace gputwin::sim
