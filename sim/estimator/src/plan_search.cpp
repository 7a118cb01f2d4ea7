#include "gputwin/sim/plan_search.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/iteration_estimate.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <thread>

namespace gputwin::sim {

namespace {

std::vector<int64_t> divisors(int64_t n)
{
  std::vector<int64_t> d;
  for (int64_t k = 1; k <= n; ++k)
    if (n % k == 0)
      d.push_back(k);
  return d;
}

bool is_valid(const GptConfig& model, const ParallelPlan& plan)
{
  try {
    validate_plan(model, plan);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

} // namespace

PlanEnumeration enumerate_plans(const GptConfig& model, int64_t gpus, int64_t global_batch, int64_t gpus_per_node,
                                int64_t hbm_bytes, const SearchSpace& space)
{
  if (gpus < 1 || global_batch < 1 || gpus_per_node < 1)
    throw std::invalid_argument("enumerate_plans: gpus, global batch and GPUs per node must be >= 1");
  const int64_t max_tp = space.max_tp > 0 ? space.max_tp : gpus_per_node;
  PlanEnumeration out;
  bool have_smallest = false;
  for (const int64_t tp : divisors(gpus)) {
    if (tp > max_tp || model.heads % tp != 0)
      continue;
    for (const int64_t cp : space.context_parallel) {
    if (cp < 1 || (gpus / tp) % cp != 0)
      continue;
    for (const int64_t pp : divisors(gpus / (tp * cp))) {
      if (model.layers % pp != 0)
        continue;
      const int64_t dp = gpus / (tp * cp * pp);
      if (global_batch % dp != 0)
        continue;
      for (const int64_t micro_batch : space.micro_batches) {
        if ((global_batch / dp) % micro_batch != 0)
          continue;
        std::vector<std::pair<Schedule, int64_t>> schedules{{Schedule::OneFOneB, 1}};
        if (pp > 1)
          for (const int64_t chunks : space.interleaved_chunks)
            schedules.emplace_back(Schedule::Interleaved, chunks);
        for (const auto& [schedule, chunks] : schedules) {
          ParallelPlan plan;
          plan.tp = tp;
          plan.cp = cp;
          plan.pp = pp;
          plan.dp = dp;
          plan.micro_batch = micro_batch;
          plan.global_batch = global_batch;
          plan.schedule = schedule;
          plan.chunks = chunks;
          plan.tp_comm = tp > 1 ? TpComm::SequenceParallel : TpComm::AllReduce;
          plan.zero_stage = dp > 1 ? 1 : 0;
          plan.attention = space.attention;
          plan.fp8 = space.fp8;
          if (!is_valid(model, plan))
            continue;
          ++out.shapes;
          bool fitted = false;
          for (const Recompute recompute : {Recompute::None, Recompute::Selective, Recompute::Full}) {
            plan.recompute = recompute;
            const int64_t peak = busiest_stage_memory(model, plan).total_bytes;
            if (!have_smallest || peak < out.smallest.peak_memory_bytes) {
              out.smallest = {plan, peak};
              have_smallest = true;
            }
            if (peak <= hbm_bytes) {
              out.fitting.push_back({plan, peak});
              fitted = true;
              break;
            }
          }
          if (!fitted)
            ++out.too_big;
        }
      }
    }
    }
  }
  return out;
}

std::vector<PlanEstimate> rank_plans(const topo::ClusterGraph& graph, const GptConfig& model,
                                     const std::vector<PlanCandidate>& candidates, const GpuComputeModel& gpu,
                                     const FrameworkProfile& framework, int threads,
                                     const std::function<void(size_t done, size_t total)>& progress)
{
  std::vector<PlanEstimate> estimates(candidates.size());
  std::atomic<size_t> next{0}, done{0};
  std::mutex progress_mutex;
  auto loop = [&] {
    for (size_t i = next++; i < candidates.size(); i = next++) {
      const Workload workload = make_workload(model, candidates[i].plan);
      estimates[i] = {candidates[i], estimate_iteration(graph, workload, gpu, framework).iteration_time_s};
      const size_t finished = ++done;
      if (progress) {
        const std::lock_guard<std::mutex> lock(progress_mutex);
        progress(finished, candidates.size());
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, threads); ++t)
    pool.emplace_back(loop);
  loop();
  for (std::thread& t : pool)
    t.join();
  std::stable_sort(estimates.begin(), estimates.end(), [](const PlanEstimate& a, const PlanEstimate& b) {
    return a.iteration_time_s < b.iteration_time_s;
  });
  return estimates;
}

} // namespace gputwin::sim
