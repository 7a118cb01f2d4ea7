#include "gputwin/sim/plan_search.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/iteration_estimate.hpp"
#include "gputwin/sim/parallel_for.hpp"

#include <algorithm>
#include <atomic>
#include <limits>
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

// One shape of enumerate_shapes: counted when valid, then the lowest ZeRO stage tried (1, or with `sharded` 1, 2, 3)
// with its cheapest recompute that fits `hbm_bytes`; the least-memory plan of all kept in out.smallest.
void fit_shape(const GptConfig& model, ParallelPlan plan, int64_t hbm_bytes, const SearchSpace& space, bool sharded,
               PlanEnumeration& out, bool& have_smallest)
{
  const int64_t dp = plan.dp, cp = plan.cp, pp = plan.pp;
  if (!is_valid(model, plan))
    return;
  ++out.shapes;
  const std::vector<int> zero_stages =
      sharded && dp * cp > 1 && pp == 1 ? std::vector<int>{1, 2, 3} : std::vector<int>{plan.zero_stage};
  bool fitted = false;
  for (const int zero : zero_stages) {
    plan.zero_stage = zero;
    plan.fp8_param_gather = plan.quantized() && zero == 3; // ZeRO-3 gathers quantized parameters (validate_plan)
    if (fitted || !is_valid(model, plan))
      continue;
    const WorkloadOptions options = space.overlaps ? applicable_overlaps(plan) : WorkloadOptions{};
    for (const Recompute recompute : {Recompute::None, Recompute::Selective, Recompute::Full}) {
      plan.recompute = recompute;
      const int64_t peak = busiest_stage_memory(model, plan).total_bytes;
      if (!have_smallest || peak < out.smallest.peak_memory_bytes) {
        out.smallest = {plan, peak, options};
        have_smallest = true;
      }
      if (peak <= hbm_bytes) {
        out.fitting.push_back({plan, peak, options});
        fitted = true;
        break;
      }
    }
  }
  if (!fitted)
    ++out.too_big;
}

// The expert layouts (ep, etp) a search tries: for a MoE model every ep dividing the experts and, with etp 1 or
// etp = tp (Megatron-Core's two common choices), the stage's tp x cp x dp ranks; a dense model: (1, 0).
std::vector<std::pair<int64_t, int64_t>> expert_layouts(const GptConfig& model, const ParallelPlan& plan)
{
  if (!model.moe.enabled())
    return {{1, 0}};
  std::vector<std::pair<int64_t, int64_t>> layouts;
  const int64_t ranks = plan.tp * plan.cp * plan.dp;
  for (const int64_t ep : divisors(model.moe.experts))
    for (const int64_t etp : plan.tp > 1 ? std::vector<int64_t>{1, plan.tp} : std::vector<int64_t>{1})
      if (ranks % (ep * etp) == 0 && model.moe.expert_ffn_hidden % etp == 0)
        layouts.emplace_back(ep, etp);
  return layouts;
}

// The enumeration of enumerate_plans; `sharded`: with pp = 1 and dp x cp > 1, where ZeRO-1 does not fit even with
// full recompute, ZeRO-2, else ZeRO-3 -- the lowest stage that fits, with its cheapest recompute.
PlanEnumeration enumerate_shapes(const GptConfig& model, int64_t gpus, int64_t global_batch, int64_t gpus_per_node,
                                 int64_t hbm_bytes, const SearchSpace& space, bool sharded)
{
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
          plan.zero_stage = dp * cp > 1 ? 1 : 0;
          plan.attention = space.attention;
          plan.precision = space.precision;
          for (const auto& [ep, etp] : expert_layouts(model, plan)) {
            plan.ep = ep;
            plan.etp = etp;
            fit_shape(model, plan, hbm_bytes, space, sharded, out, have_smallest);
          }
        }
      }
    }
    }
  }
  return out;
}

// What a stage's compute stream runs in `workload` (OpEmitter puts every compute op on stream 0), each op alone
// (compute_duration_s, or its measured duration): `total_s` in all; `lead_s` of it issued before the stage's first
// per-micro-batch op (once-per-iteration ops that need no activation); `first_forward_s`, micro-batch 0's forward of
// chunk 0, which runs before the stage sends that micro-batch's activations on.
struct StageCompute {
  double total_s = 0, lead_s = 0, first_forward_s = 0;
};

std::vector<StageCompute> stage_compute(const Workload& workload, const GpuComputeModel& gpu)
{
  std::vector<StageCompute> stages;
  for (int64_t stage = 0; stage < workload.plan.pp; ++stage) {
    StageCompute c;
    bool per_micro_batch_seen = false;
    for (const traces::Op& op : stage_program(workload, stage).ops) {
      if ((op.kind != traces::OpKind::Compute && op.kind != traces::OpKind::Memcpy) || op.stream != 0)
        continue;
      const double op_s = op.duration_ns >= 0 ? static_cast<double>(op.duration_ns) * 1e-9 : compute_duration_s(gpu, op);
      c.total_s += op_s;
      per_micro_batch_seen = per_micro_batch_seen || op.micro_batch >= 0;
      if (!per_micro_batch_seen)
        c.lead_s += op_s;
      if (op.micro_batch == 0 && op.chunk == 0 && op.phase == traces::Phase::Forward)
        c.first_forward_s += op_s;
    }
    stages.push_back(c);
  }
  return stages;
}

} // namespace

double iteration_lower_bound_s(const Workload& workload, const GpuComputeModel& gpu)
{
  // Each stage's compute stream grows by the same ops with every micro-batch: counted on one and two steps of the
  // schedule (interleaved: pp micro-batches) and extrapolated, not built for all m.
  const int64_t step = workload.plan.schedule == Schedule::Interleaved ? workload.plan.pp : 1;
  const int64_t m = workload.plan.micro_batches();
  std::vector<StageCompute> stages;
  if (m <= 2 * step) {
    stages = stage_compute(workload, gpu);
  } else {
    stages = stage_compute(with_micro_batches(workload, step), gpu);
    const std::vector<StageCompute> two = stage_compute(with_micro_batches(workload, 2 * step), gpu);
    for (size_t s = 0; s < stages.size(); ++s)
      stages[s].total_s +=
          (two[s].total_s - stages[s].total_s) * static_cast<double>(m - step) / static_cast<double>(step);
  }
  // Stage s's per-micro-batch ops start with micro-batch 0's forward, which needs its activations from stage s - 1:
  // they cannot start before micro-batch 0's forward of chunk 0 has run on every stage before it (the pipeline's
  // fill; the transfers only add). Its once-per-iteration ops issued before them (lead_s) may run meanwhile.
  double bound_s = 0, fill_s = 0;
  for (const StageCompute& c : stages) {
    bound_s = std::max({bound_s, c.total_s, fill_s + c.total_s - c.lead_s});
    fill_s += c.first_forward_s;
  }
  return bound_s * (1 - 1e-9); // below the sums' rounding
}

std::vector<int64_t> default_context_parallel(const GptConfig& model, AttentionKernel attention)
{
  if (attention == AttentionKernel::Flash && model.seq_len >= 8192)
    return {1, 2, 4, 8};
  return {1};
}

PlanEnumeration enumerate_plans(const GptConfig& model, int64_t gpus, int64_t global_batch, int64_t gpus_per_node,
                                int64_t hbm_bytes, const SearchSpace& space)
{
  if (gpus < 1 || global_batch < 1 || gpus_per_node < 1)
    throw std::invalid_argument("enumerate_plans: gpus, global batch and GPUs per node must be >= 1");
  const bool always = space.sharded == ShardedStages::Always;
  PlanEnumeration out = enumerate_shapes(model, gpus, global_batch, gpus_per_node, hbm_bytes, space, always);
  if (out.fitting.empty() && !always)
    out = enumerate_shapes(model, gpus, global_batch, gpus_per_node, hbm_bytes, space, true);
  return out;
}

std::vector<PlanEstimate> rank_plans(const topo::ClusterGraph& graph, const GptConfig& model,
                                     const std::vector<PlanCandidate>& candidates, const GpuComputeModel& gpu,
                                     const FrameworkProfile& framework, int threads,
                                     const std::function<void(size_t done, size_t total)>& progress, size_t top)
{
  // `work(i)` for every i < n on `threads` threads, progress counted on from `done_before` of `total`.
  std::mutex progress_mutex;
  const auto in_parallel = [&](size_t n, size_t done_before, size_t total, const std::function<void(size_t)>& work) {
    std::atomic<size_t> done{done_before};
    parallel_for(n, threads, [&](size_t i) {
      work(i);
      const size_t finished = ++done;
      if (progress) {
        const std::lock_guard<std::mutex> lock(progress_mutex);
        progress(finished, total);
      }
    });
  };

  // Every plan without overlaps, with the least it could take with them: the iteration shrunk by the largest share
  // of a stage's busy time that was exposed communication (overlaps hide communication; they add compute, never
  // remove it, and the bubble is made of the same steps).
  std::vector<PlanEstimate> estimates(candidates.size());
  std::vector<double> least_with_overlaps_s(candidates.size());
  const auto estimate_without_overlaps = [&](size_t i) {
    const PlanCandidate& candidate = candidates[i];
    const IterationResult result =
        estimate_iteration(graph, make_workload(model, candidate.plan, WorkloadOptions{}), gpu, framework);
    estimates[i] = {candidate, result.iteration_time_s};
    estimates[i].candidate.options = WorkloadOptions{};
    double compute_share = 1;
    for (const StageTimes& stage : result.stages)
      if (stage.compute_s + stage.exposed_comm_s > 0)
        compute_share = std::min(compute_share, stage.compute_s / (stage.compute_s + stage.exposed_comm_s));
    least_with_overlaps_s[i] = result.iteration_time_s * compute_share;
  };

  // With a `top` to find, the plans whose compute alone (iteration_lower_bound_s, with and without their overlaps)
  // exceeds the top-th time of the `top` plans with the least compute are never estimated: their estimate could
  // not rank. The threshold comes from a fixed set of plans, so which plans are ruled out is deterministic.
  std::vector<double> bound_s(candidates.size(), 0);
  std::vector<size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), 0);
  const bool prune = top < candidates.size();
  if (prune) {
    parallel_for(candidates.size(), threads, [&](size_t i) {
      const PlanCandidate& c = candidates[i];
      bound_s[i] = iteration_lower_bound_s(make_workload(model, c.plan, WorkloadOptions{}), gpu);
      if (any_overlap(c.options))
        bound_s[i] = std::min(bound_s[i], iteration_lower_bound_s(make_workload(model, c.plan, c.options), gpu));
    });
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bound_s[a] < bound_s[b]; });
  }
  const size_t first_batch = prune ? top : candidates.size();
  in_parallel(first_batch, 0, candidates.size(), [&](size_t k) { estimate_without_overlaps(order[k]); });
  std::vector<size_t> rest;
  if (prune) {
    double first_batch_worst_s = 0; // the top-th time of the first batch: the final top-th time is at most this
    for (size_t k = 0; k < first_batch; ++k)
      first_batch_worst_s = std::max(first_batch_worst_s, estimates[order[k]].iteration_time_s);
    for (size_t k = first_batch; k < order.size(); ++k) {
      if (bound_s[order[k]] > first_batch_worst_s) {
        estimates[order[k]] = {candidates[order[k]], bound_s[order[k]], false};
      } else {
        rest.push_back(order[k]);
      }
    }
  }
  const size_t estimated = first_batch + rest.size();
  in_parallel(rest.size(), first_batch, estimated, [&](size_t k) { estimate_without_overlaps(rest[k]); });

  // The plans whose overlaps could bring them into the best `top`: the top-th time without overlaps bounds the
  // final top-th time from above.
  std::vector<double> without_s;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (estimates[i].estimated)
      without_s.push_back(estimates[i].iteration_time_s);
  double threshold_s = std::numeric_limits<double>::infinity();
  if (top < without_s.size()) {
    std::vector<double> sorted = without_s;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(top - 1), sorted.end());
    threshold_s = sorted[top - 1];
  }
  std::vector<size_t> tried;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (estimates[i].estimated && any_overlap(candidates[i].options) && least_with_overlaps_s[i] <= threshold_s)
      tried.push_back(i);
  in_parallel(tried.size(), estimated, estimated + tried.size(), [&](size_t k) {
    const size_t i = tried[k];
    const double with_s =
        estimate_iteration(graph, make_workload(model, candidates[i].plan, candidates[i].options), gpu, framework)
            .iteration_time_s;
    if (with_s <= estimates[i].iteration_time_s) // a tie keeps the overlaps, as Megatron-Core users run
      estimates[i] = {candidates[i], with_s};
  });

  std::stable_sort(estimates.begin(), estimates.end(), [](const PlanEstimate& a, const PlanEstimate& b) {
    if (a.estimated != b.estimated)
      return a.estimated;
    return a.iteration_time_s < b.iteration_time_s;
  });
  return estimates;
}

} // namespace gputwin::sim
