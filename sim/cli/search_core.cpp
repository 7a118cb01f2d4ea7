#include "search_core.hpp"

#include "progress.hpp"

#include "gputwin/models/flops.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/sim/iteration_executor.hpp"

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

namespace gputwin::cli {

std::string gib(int64_t bytes)
{
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", static_cast<double>(bytes) / (1 << 30));
  return text;
}

namespace {

// What the search reports of one full simulation.
struct SimulatedPlan {
  double iteration_time_s = 0, exposed_comm_s = 0, bubble_fraction = 0;
};

// The full flow-level simulation of `plan` in a child process: SimGrid 3.32 builds one platform per process, so
// each confirmation forks, simulates and sends its figures back through a pipe.
SimulatedPlan simulate_in_child(const topo::ClusterGraph& graph, const GptConfig& model, const ParallelPlan& plan,
                                const GpuComputeModel& gpu, const FrameworkProfile& framework, const char* command,
                                const std::function<void()>& tick)
{
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
          sim::simulate_iteration(graph, make_workload(model, plan), gpu, {}, framework);
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
      graph, model, fitting, gpu, framework, jobs, [&](size_t done, size_t total) { estimating.update(done, total); });
  estimating.finish();

  const size_t confirmed = std::min(estimates.size(), top);
  std::vector<SimulatedCandidate> ranked;
  ProgressBar simulating("simulating the best plans", show_progress);
  simulating.update(0, confirmed);
  for (size_t i = 0; i < confirmed; ++i) {
    const ParallelPlan& plan = estimates[i].candidate.plan;
    const SimulatedPlan simulated =
        simulate_in_child(graph, model, plan, gpu, framework, command, [&] { simulating.tick(); });
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
  json.end_object();
}

} // namespace gputwin::cli
