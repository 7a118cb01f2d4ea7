#include "search_core.hpp"

#include "commands.hpp"
#include "progress.hpp"

#include "gputwin/models/flops.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/sim/iteration_executor.hpp"
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
  space.fp8 = parsed.has("--fp8");
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
  ParallelPlan fp8_plan;
  fp8_plan.fp8 = space.fp8;
  check_fp8_supported(fp8_plan, cluster);
  r.gpu = compute_model_for_gpu(parsed, cluster.gpu);

  r.plans = sim::enumerate_plans(model, r.gpus, r.global_batch, std::min<int64_t>(r.gpus, cluster.gpus_per_node),
                                 cluster.gpu.hbm_bytes, space);
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


namespace {

// What the search reports of one full simulation.
struct SimulatedPlan {
  double iteration_time_s = 0, exposed_comm_s = 0, bubble_fraction = 0;
};

// The full flow-level simulation of `candidate` (its plan with its overlaps) in a child process: SimGrid 3.32 builds
// one platform per process, so each confirmation forks, simulates and sends its figures back through a pipe.
SimulatedPlan simulate_in_child(const topo::ClusterGraph& graph, const GptConfig& model,
                                const sim::PlanCandidate& candidate, const GpuComputeModel& gpu,
                                const FrameworkProfile& framework, const char* command,
                                const std::function<void()>& tick)
{
  const ParallelPlan& plan = candidate.plan;
  const std::string prefix = std::string(command) + ": ";
  int fds[2];
  if (pipe(fds) != 0)
    throw std::runtime_error(prefix + "cannot create a pipe for the simulation of " + describe_plan(plan));
  std::cout.flush();
  std::cerr.flush();
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child < 0)
    throw std::runtime_error(prefix + "cannot fork the simulation of " + describe_plan(plan));
  if (child == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM); // a sweep point's process stopped: its simulation stops too
    if (getppid() != parent)
      _exit(1);
    close(fds[0]);
    SimulatedPlan r;
    try {
      const sim::IterationResult result =
          sim::simulate_iteration(graph, make_workload(model, plan, candidate.options), gpu, {}, framework);
      const sim::StageTimes& first = result.stages.front();
      const double window_s = first.pipeline_end_s - first.pipeline_start_s;
      r.iteration_time_s = result.iteration_time_s;
      r.exposed_comm_s = first.exposed_comm_s;
      r.bubble_fraction = first.pipeline_compute_s > 0
                              ? (window_s - first.pipeline_compute_s - first.pipeline_comm_s) / first.pipeline_compute_s
                              : 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gputwin %s: simulation of %s failed: %s\n", command, describe_plan(plan).c_str(), e.what());
      _exit(1);
    }
    const ssize_t written = write(fds[1], &r, sizeof r);
    _exit(written == static_cast<ssize_t>(sizeof r) ? 0 : 1);
  }
  close(fds[1]);
  SimulatedPlan r;
  size_t got = 0;
  while (got < sizeof r) {
    pollfd polled{fds[0], POLLIN, 0};
    const int ready = poll(&polled, 1, 500);
    if (ready == 0 || (ready < 0 && errno == EINTR)) {
      if (tick)
        tick();
      continue;
    }
    const ssize_t n = read(fds[0], reinterpret_cast<char*>(&r) + got, sizeof r - got);
    if (n <= 0)
      break;
    got += static_cast<size_t>(n);
  }
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (got != sizeof r || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(prefix + "the simulation of " + describe_plan(plan) + " did not complete");
  return r;
}

} // namespace

std::vector<SimulatedCandidate> rank_and_simulate(const topo::ClusterSpec& cluster, const topo::ClusterGraph& graph,
                                                  const GptConfig& model,
                                                  const std::vector<sim::PlanCandidate>& fitting,
                                                  const GpuComputeModel& gpu, const FrameworkProfile& framework,
                                                  int jobs, size_t top, const char* command, bool show_progress)
{
  ProgressBar estimating("estimating plans", show_progress);
  const std::vector<sim::PlanEstimate> estimates = sim::rank_plans(
      graph, model, fitting, gpu, framework, jobs, [&](size_t done, size_t total) { estimating.update(done, total); },
      top);
  estimating.finish();

  const size_t confirmed = std::min(estimates.size(), top);
  std::vector<SimulatedCandidate> ranked;
  ProgressBar simulating("simulating the best plans", show_progress);
  simulating.update(0, confirmed);
  for (size_t i = 0; i < confirmed; ++i) {
    const ParallelPlan& plan = estimates[i].candidate.plan;
    const SimulatedPlan simulated = simulate_in_child(graph, model, estimates[i].candidate, gpu, framework, command,
                                                      [&] { simulating.tick(); });
    SimulatedCandidate r{estimates[i], simulated.iteration_time_s};
    const int64_t batch = plan.effective_global_batch();
    r.tokens_per_s = static_cast<double>(batch * model.seq_len) / r.iteration_time_s;
    r.mfu = flops_utilization(model_flops_per_iteration(model, batch), r.iteration_time_s, plan.gpus(),
                              cluster.gpu.peak_bf16_flops);
    r.bubble_fraction = simulated.bubble_fraction;
    r.exposed_comm_s = simulated.exposed_comm_s;
    ranked.push_back(r);
    simulating.update(i + 1, confirmed);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const SimulatedCandidate& a, const SimulatedCandidate& b) {
    return a.iteration_time_s < b.iteration_time_s;
  });
  return ranked;
}

void write_plan_json(traces::JsonWriter& json, const ParallelPlan& p)
{
  json.key("plan");
  json.begin_object();
  json.field("tp", p.tp);
  json.field("cp", p.cp);
  json.field("pp", p.pp);
  json.field("dp", p.dp);
  json.field("micro_batch", p.micro_batch);
  json.field("global_batch", p.effective_global_batch());
  json.field("schedule", to_string(p.schedule));
  json.field("chunks", p.chunks);
  json.field("recompute", to_string(p.recompute));
  json.field("sp", p.sequence_parallel());
  json.field("zero", static_cast<int64_t>(p.zero_stage));
  json.field("attention", to_string(p.attention));
  json.field("pp_first_stage_layers", p.pp_first_stage_layers);
  json.field("pp_last_stage_layers", p.pp_last_stage_layers);
  json.field("fp8", p.fp8);
  json.end_object();
}

void write_overlaps_json(traces::JsonWriter& json, const WorkloadOptions& options)
{
  json.field("tp_comm_overlap", options.tp_comm_overlap);
  json.field("overlap_grad_reduce", options.overlap_grad_reduce);
  json.field("overlap_param_gather", options.overlap_param_gather);
}

std::string overlaps_text(const WorkloadOptions& options)
{
  std::string text;
  for (const auto& [on, name] : {std::pair{options.tp_comm_overlap, "tp"}, std::pair{options.overlap_grad_reduce, "grad"},
                                 std::pair{options.overlap_param_gather, "param"}})
    if (on)
      text += (text.empty() ? "" : ",") + std::string(name);
  return text.empty() ? "none" : text;
}

} // namespace gputwin::cli
