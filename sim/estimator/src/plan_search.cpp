#include "gputwin/sim/plan_search.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/models/compute_duration_memo.hpp"
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/comm_expansion.hpp"
#include "gputwin/sim/dag_executor.hpp"
#include "gputwin/sim/iteration_estimate.hpp"
#include "gputwin/sim/parallel_for.hpp"
#include "gputwin/sim/steady_state.hpp" // shortcuts_enabled

#include <algorithm>
#include <exception>
#include <limits>
#include <optional>
#include <unordered_map>
#include <stdexcept>

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

// The recomputes a search tries, cheapest first: none; the paper's selective (the unfused core; a fused kernel keeps
// nothing for it to drop); for MoE and MLA models Megatron-Core's modules as their recipes use them (NeMo and
// Megatron-Bridge DeepSeek-V3, Qwen3, GPT-OSS): the elementwise reruns (layernorm, moe_act), + mla_up_proj, + the
// dense and shared-expert MLPs, + the whole MoE MLP; then full recompute.
std::vector<std::pair<Recompute, RecomputeModules>> recompute_ladder(const GptConfig& model, const ParallelPlan& plan)
{
  std::vector<std::pair<Recompute, RecomputeModules>> ladder{{Recompute::None, {}}};
  if (plan.attention == AttentionKernel::Unfused)
    ladder.push_back({Recompute::Selective, {}});
  if (model.moe.enabled() || model.mla.enabled()) {
    // The modules that rerun something in this model (recompute_modules.hpp).
    const auto applies = [&](RecomputeModule m) {
      switch (m) {
      case RecomputeModule::MoeAct:
      case RecomputeModule::Moe: return model.moe.enabled();
      case RecomputeModule::MlaUpProj: return model.mla.enabled();
      case RecomputeModule::Mlp: return model.moe_layer_count() < model.layers;
      case RecomputeModule::SharedExperts: return model.moe.shared_width() > 0;
      default: return true;
      }
    };
    RecomputeModules modules;
    for (const std::initializer_list<RecomputeModule> add :
         {std::initializer_list<RecomputeModule>{RecomputeModule::Layernorm, RecomputeModule::MoeAct},
          {RecomputeModule::MlaUpProj},
          {RecomputeModule::Mlp, RecomputeModule::SharedExperts},
          {RecomputeModule::Moe}}) {
      RecomputeModules next = modules;
      for (const RecomputeModule m : add)
        if (applies(m))
          next.add(m);
      if (next == modules)
        continue;
      modules = next;
      ladder.push_back({Recompute::Selective, modules});
    }
  }
  ladder.push_back({Recompute::Full, {}});
  return ladder;
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
    for (const auto& [recompute, modules] : recompute_ladder(model, plan)) {
      plan.recompute = recompute;
      plan.recompute_modules = modules;
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
          plan.fp8_recipe = space.fp8_recipe;
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

// What a stage's compute stream runs in `workload` (OpEmitter puts every compute op and the blocking collectives
// on stream 0), each op alone (compute_duration_s, or its measured duration; with `graph`, a collective at its
// contention-free duration, as the estimator times it before links are shared): `total_s` in all; `lead_s` of it
// issued before the stage's first per-micro-batch op (once-per-iteration ops that need no activation) and `tail_s`
// after its last; `first_forward_s`, micro-batch 0's forward of chunk 0, which runs before the stage sends that
// micro-batch's activations on; `last_backward_s`, the last micro-batch's backward of chunk 0 (its recompute
// included), which runs after the stage has received that micro-batch's gradient (the step's first kernel waits for
// it) and before it sends its own on (the send waits for the step's last op); `micro_batches_s`, the ops of a
// micro-batch (micro_batch >= 0), all of them.
struct StageCompute {
  double total_s = 0, lead_s = 0, tail_s = 0, first_forward_s = 0, last_backward_s = 0, micro_batches_s = 0;
};

std::vector<StageCompute> stage_compute(const Workload& workload, const GpuComputeModel& gpu,
                                        const topo::ClusterGraph* graph)
{
  const int64_t last = workload.plan.micro_batches() - 1;
  std::vector<StageCompute> stages;
  ComputeDurationMemo durations(gpu);
  std::optional<CommExpander> comm;
  if (graph)
    comm.emplace(*graph, workload);
  std::unordered_map<const CommWork*, double> collective_s;
  for (int64_t stage = 0; stage < workload.plan.pp; ++stage) {
    StageCompute c;
    bool per_micro_batch_seen = false;
    for (const traces::Op& op : stage_program(workload, stage).ops) {
      if (op.stream != 0)
        continue;
      double op_s = 0;
      if (op.kind == traces::OpKind::Compute || op.kind == traces::OpKind::Memcpy) {
        op_s = durations(op);
      } else if (op.kind == traces::OpKind::Collective && comm) {
        const CommWork& work = comm->collective(op);
        const auto [it, fresh] = collective_s.try_emplace(&work, 0.0);
        if (fresh)
          it->second = contention_free_duration_s(*graph, work);
        op_s = it->second;
      } else {
        continue;
      }
      c.total_s += op_s;
      if (op.micro_batch >= 0) {
        c.micro_batches_s += op_s;
        c.tail_s = 0;
      } else {
        c.tail_s += op_s;
      }
      per_micro_batch_seen = per_micro_batch_seen || op.micro_batch >= 0;
      if (!per_micro_batch_seen)
        c.lead_s += op_s;
      if (op.micro_batch == 0 && op.chunk == 0 && op.phase == traces::Phase::Forward)
        c.first_forward_s += op_s;
      if (op.micro_batch == last && op.chunk == 0 &&
          (op.phase == traces::Phase::Backward || op.phase == traces::Phase::Recompute))
        c.last_backward_s += op_s;
    }
    stages.push_back(c);
  }
  return stages;
}

} // namespace

double iteration_lower_bound_s(const Workload& workload, const GpuComputeModel& gpu, const topo::ClusterGraph* graph)
{
  // Each stage's compute stream grows by the same ops with every micro-batch: counted on one step of the schedule
  // (interleaved: pp micro-batches), whose micro-batches' ops are one period, and extrapolated, not built for all m.
  const int64_t step = workload.plan.schedule == Schedule::Interleaved ? workload.plan.pp : 1;
  const int64_t m = workload.plan.micro_batches();
  std::vector<StageCompute> stages = stage_compute(m <= step ? workload : with_micro_batches(workload, step), gpu, graph);
  if (m > step)
    for (StageCompute& c : stages)
      c.total_s += c.micro_batches_s * static_cast<double>(m - step) / static_cast<double>(step);
  // Stage s's per-micro-batch ops start with micro-batch 0's forward, which needs its activations from stage s - 1:
  // they cannot start before micro-batch 0's forward of chunk 0 has run on every stage before it (the pipeline's
  // fill; the transfers only add). Its once-per-iteration ops issued before them (lead_s) may run meanwhile. Its last
  // one, the last micro-batch's backward of chunk 0, sends the gradient every stage before it needs for its own, one
  // after the other (the drain); its once-per-iteration ops after it (tail_s) may run meanwhile.
  double bound_s = 0, fill_s = 0, drain_s = 0; // over the stages before this one
  for (const StageCompute& c : stages) {
    const double pipelined_s = c.total_s - c.lead_s; // from the first per-micro-batch op on
    bound_s = std::max({bound_s, c.total_s, fill_s + pipelined_s, fill_s + pipelined_s - c.tail_s + drain_s});
    fill_s += c.first_forward_s;
    drain_s += c.last_backward_s;
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

namespace {

// One variant of a candidate that rank_plans may estimate: without overlaps, or with the candidate's.
struct Variant {
  size_t candidate = 0;
  bool overlaps = false;
  double floor_s = 0; // iteration_lower_bound_s: compute alone (0 when nothing is pruned)
};

// What was computed for a variant, on any thread; the ranking takes it in the variants' order.
struct Attempt {
  bool bounded = false, estimated = false;
  double bound_s = 0; // estimate_lower_bound_s
  double time_s = 0;  // estimate_iteration
  std::exception_ptr failure;
};

// The candidates fastest first, each with its best time and the options of the variant that gave it; those never
// estimated (best infinite) last, with their least known bound; ties in enumeration order.
std::vector<PlanEstimate> ranked(const std::vector<PlanCandidate>& candidates, const std::vector<double>& best_s,
                                 const std::vector<bool>& best_with_overlaps, const std::vector<double>& known_bound_s)
{
  std::vector<PlanEstimate> estimates;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (best_s[i] == std::numeric_limits<double>::infinity()) {
      estimates.push_back({candidates[i], known_bound_s[i], false});
      continue;
    }
    estimates.push_back({candidates[i], best_s[i], true});
    if (!best_with_overlaps[i])
      estimates.back().candidate.options = WorkloadOptions{};
  }
  std::stable_sort(estimates.begin(), estimates.end(), [](const PlanEstimate& a, const PlanEstimate& b) {
    if (a.estimated != b.estimated)
      return a.estimated;
    return a.iteration_time_s < b.iteration_time_s;
  });
  return estimates;
}

} // namespace

std::vector<PlanEstimate> rank_plans(const topo::ClusterGraph& graph, const GptConfig& model,
                                     const std::vector<PlanCandidate>& candidates, const GpuComputeModel& gpu,
                                     const FrameworkProfile& framework, int threads,
                                     const std::function<void(size_t done, size_t total)>& progress, size_t top)
{
  const bool prune = top < candidates.size() && shortcuts_enabled(); // GPUTWIN_EXACT=1: every variant estimated
  std::vector<Variant> variants;
  for (size_t i = 0; i < candidates.size(); ++i) {
    variants.push_back({i, false, 0});
    if (any_overlap(candidates[i].options))
      variants.push_back({i, true, 0});
  }
  const auto workload_of = [&](const Variant& v) {
    const PlanCandidate& c = candidates[v.candidate];
    return make_workload(model, c.plan, with_framework_options(v.overlaps ? c.options : WorkloadOptions{}, framework));
  };
  if (prune) { // cheapest first: the order in which the variants are taken, and the end of it
    parallel_for(variants.size(), threads, [&](size_t k) {
      variants[k].floor_s = iteration_lower_bound_s(workload_of(variants[k]), gpu, &graph);
    });
    std::stable_sort(variants.begin(), variants.end(),
                     [](const Variant& a, const Variant& b) { return a.floor_s < b.floor_s; });
  }

  // Each candidate's best time so far and whether with its overlaps; the top-th best over the candidates bounds
  // the final top-th time from above (estimates only ever add candidates or lower their times).
  constexpr double none = std::numeric_limits<double>::infinity();
  std::vector<double> best_s(candidates.size(), none);
  std::vector<bool> best_with_overlaps(candidates.size(), false);
  std::vector<double> known_bound_s(candidates.size(), none); // the least bound of a candidate's variants taken
  const auto top_th_s = [&] {
    if (!prune)
      return none;
    std::vector<double> sorted = best_s;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(top - 1), sorted.end());
    return sorted[top - 1];
  };
  // A variant taken is estimated unless its contention-free pass proves it cannot reach the best `top`.
  const auto ruled_out = [&](const Attempt& a, double limit_s) { return prune && a.bounded && a.bound_s > limit_s; };
  std::vector<Attempt> attempts(variants.size());
  const auto bound = [&](size_t k) {
    Attempt& a = attempts[k];
    if (a.bounded || a.failure)
      return;
    try {
      a.bound_s = estimate_lower_bound_s(graph, workload_of(variants[k]), gpu, framework);
      a.bounded = true;
    } catch (...) {
      a.failure = std::current_exception();
    }
  };
  const auto estimate = [&](size_t k) {
    Attempt& a = attempts[k];
    if (a.estimated || a.failure)
      return;
    try {
      a.time_s = estimate_iteration(graph, workload_of(variants[k]), gpu, framework).iteration_time_s;
      a.estimated = true;
    } catch (...) {
      a.failure = std::current_exception();
    }
  };

  // Windows of `threads` variants, cheapest first: their bounds, then the estimates the bounds leave, computed in
  // parallel against the top-th time when the window began; then taken one by one in order, against the top-th
  // time as it stands, exactly as one thread would (the top-th time only falls, so what is taken was computed).
  // Which variants are estimated therefore does not depend on the threads or their timing; an error is raised
  // only by a variant that is taken.
  const size_t window = prune ? static_cast<size_t>(std::max(1, threads)) : variants.size();
  size_t taken = 0;
  bool ended = false;
  for (size_t begin = 0; begin < variants.size() && !ended; begin += window) {
    const size_t end = std::min(variants.size(), begin + window);
    const double limit_s = top_th_s();
    std::vector<size_t> open;
    for (size_t k = begin; k < end; ++k)
      if (variants[k].floor_s <= limit_s)
        open.push_back(k);
    // Until `top` candidates have a time, no bound can rule a variant out: it is estimated without one.
    if (prune && limit_s < none)
      parallel_for(open.size(), threads, [&](size_t j) { bound(open[j]); });
    std::vector<size_t> wanted;
    for (const size_t k : open)
      if (!attempts[k].failure && !ruled_out(attempts[k], limit_s))
        wanted.push_back(k);
    parallel_for(wanted.size(), threads, [&](size_t j) { estimate(wanted[j]); });
    for (size_t k = begin; k < end; ++k) {
      const Variant& v = variants[k];
      Attempt& a = attempts[k];
      const double now_s = top_th_s();
      if (v.floor_s > now_s) {
        ended = true; // every later variant's compute alone is at least this one's
        break;
      }
      ++taken;
      if (prune && now_s < none)
        bound(k);
      if (a.failure)
        std::rethrow_exception(a.failure);
      if (a.bounded)
        known_bound_s[v.candidate] = std::min(known_bound_s[v.candidate], a.bound_s);
      if (ruled_out(a, now_s))
        continue;
      estimate(k);
      if (a.failure)
        std::rethrow_exception(a.failure);
      double& best = best_s[v.candidate];
      if (a.time_s < best || (a.time_s == best && v.overlaps)) { // a tie keeps the overlaps, as Megatron-Core users run
        best = a.time_s;
        best_with_overlaps[v.candidate] = v.overlaps;
      }
    }
    if (progress)
      progress(ended ? variants.size() : taken, variants.size());
  }
  for (size_t k = taken; k < variants.size(); ++k) // never taken: their compute alone bounds them
    known_bound_s[variants[k].candidate] = std::min(known_bound_s[variants[k].candidate], variants[k].floor_s);

  return ranked(candidates, best_s, best_with_overlaps, known_bound_s);
}

} // namespace gputwin::sim
