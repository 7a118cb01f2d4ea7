#include "search_core.hpp"

#include "gputwin/sim/report_json.hpp"

#include "commands.hpp"
#include "gputwin/sim/isolated_run.hpp"
#include "gputwin/common/progress.hpp"
#include "resource_estimate.hpp"

#include "gputwin/models/flops.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/models/plan_metadata.hpp"
#include "gputwin/traces/json_value.hpp"
#include "gputwin/sim/iteration_executor.hpp"
#include "gputwin/sim/iteration_report.hpp"
#include "gputwin/topologies/cluster_flags.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <functional>
#include <sstream>
#include <iostream>
#include <stdexcept>
#include <thread>

namespace gputwin::cli {

std::string gib(int64_t bytes)
{
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", static_cast<double>(bytes) / (1 << 30));
  return text;
}

SearchRequest read_search_request(const ParsedArgs& parsed, const GptConfig& model, int64_t default_top,
                                  const std::string& gpus_required)
{
  SearchRequest r;
  if (!parsed.has("--gpus"))
    throw InputError("--gpus: required " + gpus_required);
  r.gpus = parsed.integer("--gpus").value_or(0);
  if (r.gpus < 1 || r.gpus > 1000000)
    throw InputError("--gpus: expected an integer in [1, 1000000], got " + *parsed.value("--gpus"));
  r.global_batch = parsed.integer("--global-batch").value_or(r.gpus);
  if (r.global_batch < 1)
    throw InputError("--global-batch: expected a positive integer, got " + *parsed.value("--global-batch"));
  const int64_t top = parsed.integer("--top").value_or(default_top);
  if (top < 1)
    throw InputError("--top: expected a positive integer, got " + *parsed.value("--top"));
  r.top = static_cast<size_t>(top);
  const int64_t jobs =
      parsed.integer("--jobs").value_or(std::max<unsigned>(1, std::thread::hardware_concurrency()));
  if (jobs < 1 || jobs > 1024)
    throw InputError("--jobs: expected an integer in [1, 1024], got " + *parsed.value("--jobs"));
  r.jobs = static_cast<int>(jobs);
  sim::SearchSpace space;
  if (const auto kernel = parsed.value("--attention")) {
    const auto parsed_kernel = parse_attention(*kernel);
    if (!parsed_kernel)
      throw InputError("--attention: expected unfused|flash, got '" + *kernel + "'");
    space.attention = *parsed_kernel;
  }
  // A comma-separated list of positive integers.
  auto integer_list = [](const std::string& flag, const std::string& list) {
    std::vector<int64_t> values;
    size_t begin = 0;
    while (begin <= list.size()) {
      const size_t end = std::min(list.find(',', begin), list.size());
      const std::string item = list.substr(begin, end - begin);
      char* rest = nullptr;
      const long long value = std::strtoll(item.c_str(), &rest, 10);
      if (item.empty() || *rest != '\0' || value < 1 || value > 1 << 20)
        throw InputError(flag + ": expected a comma-separated list of positive integers, got '" + list + "'");
      values.push_back(value);
      begin = end + 1;
    }
    return values;
  };
  if (const auto list = parsed.value("--cp")) {
    space.context_parallel = integer_list("--cp", *list);
    if (space.attention != AttentionKernel::Flash && space.context_parallel != std::vector<int64_t>{1})
      throw InputError("--cp: context parallelism needs --attention flash");
  } else {
    space.context_parallel = sim::default_context_parallel(model, space.attention);
  }
  space.precision = read_precision(parsed);
  space.overlaps = !parsed.has("--no-overlaps");
  if (const auto list = parsed.value("--micro-batches")) {
    space.micro_batches = integer_list("--micro-batches", *list);
  }

  r.cluster = topo::read_cluster(parsed);
  topo::ClusterSpec& cluster = r.cluster;
  if (r.gpus > cluster.gpus_per_node && r.gpus % cluster.gpus_per_node != 0)
    throw InputError("--gpus: " + std::to_string(r.gpus) + " is not a multiple of " + cluster.name + "'s " +
                     std::to_string(cluster.gpus_per_node) + " GPUs per node (expected whole nodes)");
  if (!parsed.has("--nodes"))
    cluster = topo::read_cluster(parsed, static_cast<int>(std::max<int64_t>(1, r.gpus / cluster.gpus_per_node)));
  else if (r.gpus > cluster.gpus())
    throw InputError("--nodes: " + std::to_string(cluster.nodes) + " nodes of " + cluster.name + " have " +
                     std::to_string(cluster.gpus()) + " GPUs, fewer than --gpus " + std::to_string(r.gpus));
  ParallelPlan precision_plan;
  precision_plan.precision = space.precision;
  check_precision_supported(precision_plan, cluster);
  r.gpu = compute_model_for_gpu(parsed, cluster.gpu);

  // TP up to the NVLink domain (the node, or a rack of nodes): its collectives stay on NVLink.
  const int64_t max_tp = std::min<int64_t>(r.gpus, cluster.domain_gpus());
  check_work(estimate_search_work(model, r.gpus, r.global_batch, max_tp, space, static_cast<int64_t>(r.top)),
             max_work(parsed), "the search");
  r.plans = sim::enumerate_plans(model, r.gpus, r.global_batch, max_tp, cluster.gpu.hbm_bytes, space);
  if (r.plans.shapes == 0)
    throw InputError("--gpus: no parallel plan of " + model.name + " (heads " + std::to_string(model.heads) +
                     ", layers " + std::to_string(model.layers) + ") splits over " + std::to_string(r.gpus) +
                     " GPUs with global batch " + std::to_string(r.global_batch) +
                     " (tp must divide the heads, pp the layers, dp the global batch)");
  if (r.plans.fitting.empty())
    throw InputError("no plan fits: the smallest, " + describe_plan(r.plans.smallest.plan) + ", needs " +
                     gib(r.plans.smallest.peak_memory_bytes) + " GiB per GPU but the " + cluster.gpu.kind + " has " +
                     gib(cluster.gpu.hbm_bytes) + " GiB (more GPUs, a smaller global batch, or --attention flash)");
  return r;
}


std::vector<SimulatedCandidate> rank_and_simulate(const topo::ClusterSpec& cluster, const topo::ClusterGraph& graph,
                                                  const GptConfig& model,
                                                  const std::vector<sim::PlanCandidate>& fitting,
                                                  const GpuComputeModel& gpu, const FrameworkProfile& framework,
                                                  int jobs, size_t top, const char* command, bool show_progress,
                                                  size_t* ruled_out)
{
  ProgressBar estimating("estimating plans", show_progress);
  const std::vector<sim::PlanEstimate> estimates = sim::rank_plans(
      graph, model, fitting, gpu, framework, jobs, [&](size_t done, size_t total) { estimating.update(done, total); },
      top);
  estimating.finish();
  if (ruled_out)
    *ruled_out = static_cast<size_t>(std::count_if(estimates.begin(), estimates.end(),
                                                   [](const sim::PlanEstimate& e) { return !e.estimated; }));

  // The best `top` in full, each in a process of its own (SimGrid builds one platform per process), its report
  // coming back as JSON.
  const size_t confirmed = std::min(estimates.size(), top);
  ProgressBar simulating("simulating the best plans", show_progress);
  simulating.update(0, confirmed);
  size_t finished = 0;
  sim::IsolatedRunCallbacks callbacks;
  callbacks.on_idle = [&] { simulating.tick(); };
  callbacks.on_done = [&](size_t, const std::string&) { simulating.update(++finished, confirmed); };
  callbacks.describe = [&](size_t i) {
    return std::string("the simulation of ") + describe_plan(estimates[i].candidate.plan) + " (" + command + ")";
  };
  const std::vector<std::string> reports = sim::run_isolated(
      confirmed, 1,
      [&](size_t i) {
        const sim::PlanCandidate& candidate = estimates[i].candidate;
        const sim::IterationResult result = sim::SimgridExecutor().run(
            graph, make_workload(model, candidate.plan, candidate.options), gpu, framework, {}, {});
        std::ostringstream out;
        JsonWriter json(out, 0);
        sim::write_iteration_report(json, sim::iteration_report(model, candidate.plan, cluster, result));
        return out.str();
      },
      callbacks);
  std::vector<SimulatedCandidate> ranked;
  for (size_t i = 0; i < confirmed; ++i)
    ranked.push_back(SimulatedCandidate{estimates[i], sim::read_iteration_report(traces::parse_json(reports[i]))});
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
  sim::write_overlaps_json(json, c.estimate.candidate.options);
  json.end_object();
  json.field("peak_memory_bytes", c.estimate.candidate.peak_memory_bytes);
  json.field("estimated_iteration_time_s", c.estimate.iteration_time_s);
  json.key("report");
  sim::write_iteration_report(json, c.report);
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
  c.report = sim::read_iteration_report(member(root, "report"));
  return c;
}

} // namespace gputwin::cli
