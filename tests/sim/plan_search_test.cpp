// The plan enumeration of `gputwin search`: every plan valid, fitting, and the fixed choices as documented.
#include "dgx_spec.hpp"

#include "gputwin/models/framework_profile.hpp"
#include "gputwin/models/memory_report.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/sim/iteration_estimate.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/parallel_for.hpp"
#include "gputwin/sim/plan_search.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <tuple>

namespace gputwin::sim {
namespace {

constexpr int64_t a100_80gb_bytes = 80'000'000'000;

TEST(PlanSearch, EveryCandidateIsValidFitsAndUsesTheCheapestRecompute)
{
  const GptConfig model = find_catalog_model("gpt3-175b")->model;
  const PlanEnumeration plans = enumerate_plans(model, 64, 64, 8, a100_80gb_bytes);
  ASSERT_FALSE(plans.fitting.empty());
  EXPECT_EQ(plans.shapes, static_cast<int64_t>(plans.fitting.size()) + plans.too_big);
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t, int, int64_t>> seen;
  for (const PlanCandidate& c : plans.fitting) {
    const ParallelPlan& p = c.plan;
    EXPECT_NO_THROW(validate_plan(model, p)) << describe_plan(p);
    EXPECT_EQ(p.gpus(), 64);
    EXPECT_EQ(p.effective_global_batch(), 64);
    EXPECT_LE(p.tp, 8) << "TP stays inside a node";
    EXPECT_EQ(p.sequence_parallel(), p.tp > 1);
    // ZeRO-1 whenever dp > 1; ZeRO-2/3 only with pp = 1, where the stage below does not fit even with full
    // recompute.
    EXPECT_EQ(p.zero_stage == 0, p.dp == 1) << describe_plan(p);
    if (p.zero_stage >= 2) {
      EXPECT_EQ(p.pp, 1) << describe_plan(p);
      ParallelPlan lower = p;
      lower.zero_stage = p.zero_stage - 1;
      lower.recompute = Recompute::Full;
      EXPECT_GT(busiest_stage_memory(model, lower).total_bytes, a100_80gb_bytes) << describe_plan(p);
    }
    EXPECT_EQ(c.peak_memory_bytes, busiest_stage_memory(model, p).total_bytes);
    EXPECT_LE(c.peak_memory_bytes, a100_80gb_bytes);
    // A cheaper recompute would not have fitted.
    if (p.recompute != Recompute::None) {
      ParallelPlan cheaper = p;
      cheaper.recompute = p.recompute == Recompute::Full ? Recompute::Selective : Recompute::None;
      EXPECT_GT(busiest_stage_memory(model, cheaper).total_bytes, a100_80gb_bytes) << describe_plan(p);
    }
    EXPECT_TRUE(seen.insert({p.tp, p.pp, p.dp, p.micro_batch, static_cast<int>(p.schedule), p.chunks}).second)
        << "each split once: " << describe_plan(p);
  }
  // The paper's 64-GPU-slot shape (tp 8, pp 8) is among them.
  bool paper_shape = false;
  for (const PlanCandidate& c : plans.fitting)
    paper_shape = paper_shape || (c.plan.tp == 8 && c.plan.pp == 8 && c.plan.micro_batch == 1 &&
                                  c.plan.schedule == Schedule::OneFOneB);
  EXPECT_TRUE(paper_shape);
}

TEST(PlanSearch, NothingFitsReportsTheSmallestPlan)
{
  const GptConfig model = find_catalog_model("gpt3-175b")->model;
  const PlanEnumeration plans = enumerate_plans(model, 8, 8, 8, a100_80gb_bytes);
  EXPECT_TRUE(plans.fitting.empty());
  EXPECT_EQ(plans.too_big, plans.shapes);
  EXPECT_GT(plans.smallest.peak_memory_bytes, a100_80gb_bytes);
  EXPECT_EQ(plans.smallest.plan.recompute, Recompute::Full);
}

// Every candidate carries the Megatron-Core overlaps that have something to overlap in its plan, and no other:
// no gradient reduction (dp x cp = 1) means no --overlap-grad-reduce or --overlap-param-gather, no SP no
// --tp-comm-overlap; with `overlaps` off none at all.
TEST(PlanSearch, CandidatesCarryTheOverlapsThatApplyAndNoOthers)
{
  const GptConfig model = find_catalog_model("gpt3-175b")->model;
  const PlanEnumeration plans = enumerate_plans(model, 64, 64, 8, a100_80gb_bytes);
  int with_grad_reduce = 0, with_dp_1 = 0;
  for (const PlanCandidate& c : plans.fitting) {
    const ParallelPlan& p = c.plan;
    const bool reduced = p.dp * p.cp > 1;
    // ZeRO-2/3 reduce every unit in its backward anyway, ZeRO-3 prefetches its gathers anyway.
    EXPECT_EQ(c.options.overlap_grad_reduce, reduced && p.zero_stage <= 1) << describe_plan(p);
    EXPECT_EQ(c.options.overlap_param_gather, reduced && (p.zero_stage == 1 || p.zero_stage == 2)) << describe_plan(p);
    EXPECT_EQ(c.options.tp_comm_overlap, p.tp > 1 && p.sequence_parallel()) << describe_plan(p);
    with_grad_reduce += c.options.overlap_grad_reduce ? 1 : 0;
    with_dp_1 += p.dp == 1 ? 1 : 0;
  }
  EXPECT_GT(with_grad_reduce, 0);
  EXPECT_GT(with_dp_1, 0);
  SearchSpace none;
  none.overlaps = false;
  for (const PlanCandidate& c : enumerate_plans(model, 64, 64, 8, a100_80gb_bytes, none).fitting)
    EXPECT_FALSE(any_overlap(c.options)) << describe_plan(c.plan);
}

// Context parallelism is tried by default with flash attention on long sequences only, and every size the
// enumeration keeps divides N / tp and leaves the sequence divisible by 2 cp.
TEST(PlanSearch, DefaultContextParallelismOnLongSequencesWithFlash)
{
  GptConfig model = find_catalog_model("llama3-8b")->model;
  model.seq_len = 8192;
  EXPECT_EQ(default_context_parallel(model, AttentionKernel::Flash), (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(default_context_parallel(model, AttentionKernel::Unfused), (std::vector<int64_t>{1}));
  GptConfig short_model = model;
  short_model.seq_len = 4096;
  EXPECT_EQ(default_context_parallel(short_model, AttentionKernel::Flash), (std::vector<int64_t>{1}));

  SearchSpace space;
  space.attention = AttentionKernel::Flash;
  space.context_parallel = default_context_parallel(model, space.attention);
  const PlanEnumeration plans = enumerate_plans(model, 16, 16, 8, a100_80gb_bytes, space);
  std::set<int64_t> sizes;
  for (const PlanCandidate& c : plans.fitting) {
    EXPECT_EQ((16 / c.plan.tp) % c.plan.cp, 0) << describe_plan(c.plan);
    EXPECT_EQ(model.seq_len % (2 * c.plan.cp), 0) << describe_plan(c.plan);
    EXPECT_EQ(c.plan.zero_stage == 0, c.plan.dp * c.plan.cp == 1) << "ZeRO over dp x cp: " << describe_plan(c.plan);
    sizes.insert(c.plan.cp);
  }
  EXPECT_EQ(sizes, (std::set<int64_t>{1, 2, 4, 8}));
}

// A model that fits only sharded: Llama 3 70B's layers, 83 of them (a prime: no pipeline split), on 64 GPUs without
// tensor parallelism fits as ZeRO-3 (18 bytes per parameter over 64 ranks) but not as ZeRO-1 or ZeRO-2 (the whole
// weights alone are 136 GiB); the search finds it, with the cheapest recompute that fits. With 80 layers pipelines
// fit with ZeRO-1, and ZeRO-3 is tried beside them only when asked (ShardedStages::Always).
TEST(PlanSearch, FindsZero3WhereOnlyShardedWeightsFit)
{
  GptConfig model = find_catalog_model("llama3-70b")->model;
  model.layers = 83;
  SearchSpace space;
  space.max_tp = 1;
  space.micro_batches = {1};
  space.attention = AttentionKernel::Flash;
  PlanEnumeration plans = enumerate_plans(model, 64, 64, 8, a100_80gb_bytes, space);
  ASSERT_EQ(plans.fitting.size(), 1U);
  ParallelPlan p = plans.fitting[0].plan;
  EXPECT_EQ(p.zero_stage, 3) << describe_plan(p);
  EXPECT_EQ(p.pp, 1);
  EXPECT_EQ(p.dp, 64);
  EXPECT_EQ(plans.fitting[0].peak_memory_bytes, busiest_stage_memory(model, p).total_bytes);
  EXPECT_LE(plans.fitting[0].peak_memory_bytes, a100_80gb_bytes);
  for (const int lower : {1, 2}) {
    ParallelPlan q = p;
    q.zero_stage = lower;
    q.recompute = Recompute::Full;
    EXPECT_GT(busiest_stage_memory(model, q).total_bytes, a100_80gb_bytes) << describe_plan(q);
  }
  if (p.recompute != Recompute::None) {
    p.recompute = p.recompute == Recompute::Full ? Recompute::Selective : Recompute::None;
    EXPECT_GT(busiest_stage_memory(model, p).total_bytes, a100_80gb_bytes) << describe_plan(p);
  }

  model.layers = 80;
  auto stages = [](const PlanEnumeration& e) {
    std::set<std::pair<int64_t, int>> pp_and_zero;
    for (const PlanCandidate& c : e.fitting)
      pp_and_zero.insert({c.plan.pp == 1 ? 1 : 2, c.plan.zero_stage});
    return pp_and_zero;
  };
  plans = enumerate_plans(model, 64, 64, 8, a100_80gb_bytes, space);
  EXPECT_EQ(stages(plans), (std::set<std::pair<int64_t, int>>{{2, 1}})) << "pipelines with ZeRO-1 only";
  space.sharded = ShardedStages::Always;
  plans = enumerate_plans(model, 64, 64, 8, a100_80gb_bytes, space);
  EXPECT_EQ(stages(plans), (std::set<std::pair<int64_t, int>>{{1, 3}, {2, 1}}));
}

// Two DGX-like A100 nodes, their GPU's built-in compute model and Megatron-LM's host.
struct SmallCluster {
  topo::ClusterGraph graph{testing::dgx_like_spec(2, false)};
  GpuComputeModel gpu = builtin_compute_model(GpuGeneration::Ampere, graph.spec().gpu.kind,
                                              graph.spec().gpu.peak_bf16_flops, graph.spec().gpu.hbm_bytes_per_s);
  FrameworkProfile framework = builtin_framework_profile("megatron-lm");
};

// rank_plans keeps, for each plan, the faster of its variant with every applicable overlap and its variant with none.
TEST(PlanSearch, RankingKeepsTheFasterOfWithAndWithoutOverlaps)
{
  GptConfig model = find_catalog_model("gpt-22b")->model;
  model.layers = 4;
  const SmallCluster c;
  const topo::ClusterGraph& graph = c.graph;
  const GpuComputeModel& gpu = c.gpu;
  const FrameworkProfile& framework = c.framework;
  SearchSpace space;
  space.micro_batches = {1};
  const PlanEnumeration plans = enumerate_plans(model, 16, 16, 8, a100_80gb_bytes, space);
  ASSERT_FALSE(plans.fitting.empty());
  const std::vector<PlanEstimate> ranked = rank_plans(graph, model, plans.fitting, gpu, framework, 2);
  ASSERT_EQ(ranked.size(), plans.fitting.size());
  int tried = 0;
  for (const PlanEstimate& e : ranked) {
    const ParallelPlan& p = e.candidate.plan;
    const WorkloadOptions all = applicable_overlaps(p);
    const auto estimate = [&](const WorkloadOptions& options) {
      return estimate_iteration(graph, make_workload(model, p, options), gpu, framework).iteration_time_s;
    };
    const double with_s = estimate(all), without_s = estimate(WorkloadOptions{});
    EXPECT_EQ(e.iteration_time_s, std::min(with_s, without_s)) << describe_plan(p);
    const bool kept_overlaps = any_overlap(e.candidate.options);
    EXPECT_EQ(kept_overlaps, any_overlap(all) && with_s <= without_s) << describe_plan(p);
    if (kept_overlaps) {
      EXPECT_EQ(e.candidate.options.tp_comm_overlap, all.tp_comm_overlap);
      EXPECT_EQ(e.candidate.options.overlap_grad_reduce, all.overlap_grad_reduce);
      EXPECT_EQ(e.candidate.options.overlap_param_gather, all.overlap_param_gather);
    }
    tried += any_overlap(all) ? 1 : 0;
  }
  EXPECT_GT(tried, 0);

  // Asked for the best 2 only, it skips the overlap variants that could not reach them, and ranks the same 2 first.
  for (const size_t top : {size_t{1}, size_t{2}}) {
    const std::vector<PlanEstimate> best = rank_plans(graph, model, plans.fitting, gpu, framework, 2, {}, top);
    ASSERT_EQ(best.size(), ranked.size());
    for (size_t i = 0; i < top; ++i) {
      EXPECT_EQ(describe_plan(best[i].candidate.plan), describe_plan(ranked[i].candidate.plan)) << i;
      EXPECT_EQ(best[i].iteration_time_s, ranked[i].iteration_time_s) << i;
      EXPECT_EQ(any_overlap(best[i].candidate.options), any_overlap(ranked[i].candidate.options)) << i;
    }
  }
}

// iteration_lower_bound_s: never above the estimate of any variant, and close to it where compute dominates; a
// search for the best few rules out the plans whose bound exceeds them, and ranks the same plans first.
TEST(PlanSearch, PlansRuledOutByComputeAloneCouldNotRank)
{
  GptConfig model = find_catalog_model("gpt-22b")->model;
  model.layers = 8;
  const SmallCluster c;
  const topo::ClusterGraph& graph = c.graph;
  const GpuComputeModel& gpu = c.gpu;
  const FrameworkProfile& framework = c.framework;
  SearchSpace space;
  space.micro_batches = {1, 2, 4};
  const PlanEnumeration plans = enumerate_plans(model, 16, 64, 8, a100_80gb_bytes, space);
  ASSERT_GT(plans.fitting.size(), 4u);
  double tightest = 0;
  for (const PlanCandidate& candidate : plans.fitting)
    for (const WorkloadOptions& options : {WorkloadOptions{}, applicable_overlaps(candidate.plan)}) {
      const Workload w = make_workload(model, candidate.plan, options);
      const double bound_s = iteration_lower_bound_s(w, gpu);
      const double estimate_s = estimate_iteration(graph, w, gpu, framework).iteration_time_s;
      EXPECT_LE(bound_s, estimate_s) << describe_plan(candidate.plan);
      tightest = std::max(tightest, bound_s / estimate_s);
    }
  EXPECT_GT(tightest, 0.7); // compute is most of a plan's time: the bound is no trivial zero

  // A deep pipeline with as many micro-batches as stages spends ~(pp - 1) / (m + pp - 1) of its time filling and
  // draining: the compute sums alone bound it at ~m / (m + pp - 1) = 0.53 of its estimate; with the fill (micro-batch
  // 0's forward through the stages before the last, a third of a micro-batch's compute each) ~0.69; with the drain
  // too (the last micro-batch's backward back through them, two thirds) the whole pipeline, less its communication.
  const auto expect_fill_and_drain_counted = [&](const GptConfig& deep_model, const ParallelPlan& deep) {
    const Workload w = make_workload(deep_model, deep);
    const double bound_s = iteration_lower_bound_s(w, gpu);
    const double estimate_s = estimate_iteration(graph, w, gpu, framework).iteration_time_s;
    std::printf("%s: compute-alone bound %.4f of the estimate\n", describe_plan(deep).c_str(), bound_s / estimate_s);
    EXPECT_LE(bound_s, estimate_s) << describe_plan(deep);
    EXPECT_GT(bound_s, 0.85 * estimate_s) << describe_plan(deep);
  };
  ParallelPlan deep;
  deep.pp = 8;
  deep.dp = 2;
  deep.global_batch = 16;
  expect_fill_and_drain_counted(model, deep); // 1F1B, 8 micro-batches
  GptConfig sixteen_layers = model;
  sixteen_layers.layers = 16;
  deep.schedule = Schedule::Interleaved;
  deep.chunks = 2;
  expect_fill_and_drain_counted(sixteen_layers, deep);

  const std::vector<PlanEstimate> all = rank_plans(graph, model, plans.fitting, gpu, framework, 2);
  const std::vector<PlanEstimate> best = rank_plans(graph, model, plans.fitting, gpu, framework, 2, {}, 1);
  ASSERT_EQ(best.size(), all.size());
  EXPECT_TRUE(std::all_of(all.begin(), all.end(), [](const PlanEstimate& e) { return e.estimated; }));
  EXPECT_EQ(describe_plan(best[0].candidate.plan), describe_plan(all[0].candidate.plan));
  EXPECT_EQ(best[0].iteration_time_s, all[0].iteration_time_s);
  size_t ruled_out = 0;
  for (const PlanEstimate& e : best)
    if (!e.estimated) {
      ++ruled_out;
      EXPECT_GT(e.iteration_time_s, best[0].iteration_time_s) << describe_plan(e.candidate.plan); // its bound
    }
  EXPECT_GT(ruled_out, 0u);
  EXPECT_FALSE(best.back().estimated); // ruled out last
}

// estimate_lower_bound_s (one contention-free pass of the DAG executor) is never above the estimate of either
// variant, and within a few per cent of it: interference and link sharing only lengthen ops. A ranking for the best
// K that prunes with it ranks the same plans first whatever the threads, and estimates the same plans.
TEST(PlanSearch, ContentionFreePassBoundsTheEstimateAndPrunesTheSameWithAnyThreads)
{
  GptConfig model = find_catalog_model("gpt-22b")->model;
  model.layers = 8;
  const SmallCluster c;
  SearchSpace space;
  space.micro_batches = {1, 2};
  const PlanEnumeration plans = enumerate_plans(model, 16, 64, 8, a100_80gb_bytes, space);
  ASSERT_GT(plans.fitting.size(), 4u);
  double loosest = 1;
  int with_communication = 0;
  for (const PlanCandidate& candidate : plans.fitting)
    for (const WorkloadOptions& options : {WorkloadOptions{}, applicable_overlaps(candidate.plan)}) {
      const Workload w = make_workload(model, candidate.plan, options);
      const double bound_s = estimate_lower_bound_s(c.graph, w, c.gpu, c.framework);
      const IterationResult estimate = estimate_iteration(c.graph, w, c.gpu, c.framework);
      EXPECT_LE(bound_s, estimate.iteration_time_s) << describe_plan(candidate.plan);
      // Compute alone <= with the compute stream's blocking collectives <= the contention-free pass.
      const double compute_s = iteration_lower_bound_s(w, c.gpu);
      const double stream_s = iteration_lower_bound_s(w, c.gpu, &c.graph);
      EXPECT_LE(compute_s, stream_s * (1 + 1e-12)) << describe_plan(candidate.plan); // equal where nothing blocks
      EXPECT_LE(stream_s, bound_s) << describe_plan(candidate.plan);
      if (candidate.plan.tp > 1 && !options.tp_comm_overlap) { // its TP collectives block the compute stream
        EXPECT_GT(stream_s, compute_s * 1.01) << describe_plan(candidate.plan);
      }
      loosest = std::min(loosest, bound_s / estimate.iteration_time_s);
      with_communication += std::any_of(estimate.stages.begin(), estimate.stages.end(),
                                        [](const StageTimes& s) { return s.exposed_comm_s > 0; });
    }
  EXPECT_GT(with_communication, 0);
  EXPECT_GT(loosest, 0.9);

  const std::vector<PlanEstimate> all = rank_plans(c.graph, model, plans.fitting, c.gpu, c.framework, 2);
  const auto same = [](const PlanEstimate& a, const PlanEstimate& b) {
    return describe_plan(a.candidate.plan) == describe_plan(b.candidate.plan) &&
           a.iteration_time_s == b.iteration_time_s && a.estimated == b.estimated &&
           any_overlap(a.candidate.options) == any_overlap(b.candidate.options);
  };
  for (const size_t top : {size_t{1}, size_t{3}}) {
    const std::vector<PlanEstimate> one = rank_plans(c.graph, model, plans.fitting, c.gpu, c.framework, 1, {}, top);
    for (const int threads : {2, 5}) {
      const std::vector<PlanEstimate> many =
          rank_plans(c.graph, model, plans.fitting, c.gpu, c.framework, threads, {}, top);
      ASSERT_EQ(many.size(), one.size());
      for (size_t i = 0; i < one.size(); ++i)
        EXPECT_TRUE(same(one[i], many[i])) << "top " << top << ", " << threads << " threads, place " << i;
    }
    for (size_t i = 0; i < top; ++i)
      EXPECT_TRUE(same(one[i], all[i])) << "top " << top << ", place " << i;
    size_t ruled_out = 0;
    for (const PlanEstimate& e : one)
      if (!e.estimated) {
        ++ruled_out;
        EXPECT_GT(e.iteration_time_s, one[top - 1].iteration_time_s) << describe_plan(e.candidate.plan);
      }
    EXPECT_GT(ruled_out, 0u) << "top " << top;
  }
}

// The best K with pruning are the best K with every variant estimated, where overlaps shorten more than exposed
// communication: gpt-22b on 16 A100s (`search --top 2`), whose second plan is tp 4 dp 4 with overlaps. Its plan
// without them has 0.35 s of host gaps that the overlaps also close, so "without, less its exposed share" was no
// bound for it (the pruning before 2026-11-28 ranked tp 8 dp 2 second).
TEST(PlanSearch, PruningKeepsTheBestOfEveryVariantEstimatedOnGpt22bOn16A100s)
{
  const GptConfig model = find_catalog_model("gpt-22b")->model;
  const topo::ClusterGraph graph(topo::load_cluster("dgx-a100", 2, {}));
  const GpuComputeModel gpu = builtin_compute_model(GpuGeneration::Ampere, graph.spec().gpu.kind,
                                                    graph.spec().gpu.peak_bf16_flops, graph.spec().gpu.hbm_bytes_per_s);
  const FrameworkProfile framework = builtin_framework_profile("megatron-lm");
  const PlanEnumeration plans = enumerate_plans(model, 16, 16, 8, graph.spec().gpu.hbm_bytes);
  const std::vector<PlanEstimate> all = rank_plans(graph, model, plans.fitting, gpu, framework, 2);
  const std::vector<PlanEstimate> best = rank_plans(graph, model, plans.fitting, gpu, framework, 2, {}, 2);
  ASSERT_EQ(best.size(), all.size());
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(describe_plan(best[i].candidate.plan), describe_plan(all[i].candidate.plan)) << i;
    EXPECT_EQ(best[i].iteration_time_s, all[i].iteration_time_s) << i;
    EXPECT_EQ(any_overlap(best[i].candidate.options), any_overlap(all[i].candidate.options)) << i;
  }
  EXPECT_LT(std::count_if(best.begin(), best.end(), [](const PlanEstimate& e) { return e.estimated; }),
            static_cast<std::ptrdiff_t>(all.size() / 2)); // most are ruled out
}

// An error in a worker thread reaches the caller (no std::terminate), and the other threads stop
// taking items.
TEST(ParallelFor, AWorkersExceptionIsRethrownOnTheCaller)
{
  const auto failing_at_5 = [](std::atomic<int>& ran) {
    return [&ran](size_t i) {
      ++ran;
      if (i == 5)
        throw InputError("--fail-link: the failure disconnects the job");
    };
  };
  std::atomic<int> ran{0};
  EXPECT_THROW(parallel_for(1000, 4, failing_at_5(ran)), InputError); // rethrown, never std::terminate
  // On one thread the order is fixed: items 0..5 run, then no further item is taken. (With several threads the
  // others may finish every cheap item before the failure is seen, so only the rethrow is asserted there.)
  std::atomic<int> ran_alone{0};
  EXPECT_THROW(parallel_for(1000, 1, failing_at_5(ran_alone)), InputError);
  EXPECT_EQ(ran_alone.load(), 6);
  int sum = 0;
  std::mutex m;
  parallel_for(10, 3, [&](size_t i) {
    const std::lock_guard<std::mutex> lock(m);
    sum += static_cast<int>(i);
  });
  EXPECT_EQ(sum, 45);
}

// MoE and MLA models climb Megatron-Core's recompute modules before full recompute (their recipes' elementwise
// reruns, then the MLA up-projections, the dense and shared MLPs, the whole MoE MLP): Qwen3-30B-A3B at 8192 tokens on
// 8 H100 fits mostly with layernorm + moe_act; every rung below a candidate's does not fit, and each rung stores less
// than the one before.
TEST(PlanSearch, MixtureOfExpertsClimbsTheRecomputeModulesBeforeFullRecompute)
{
  GptConfig model = find_catalog_model("qwen3-30b-a3b")->model;
  model.seq_len = 8192;
  SearchSpace space;
  space.attention = AttentionKernel::Flash;
  const int64_t hbm = 85'520'809'984; // H100 80 GB
  const PlanEnumeration plans = enumerate_plans(model, 8, 64, 8, hbm, space);
  ASSERT_FALSE(plans.fitting.empty());
  const std::vector<std::string> ladder = {"none", "selective:layernorm+moe_act", "selective:layernorm+moe_act+moe",
                                           "full"};
  int with_modules = 0;
  for (const PlanCandidate& c : plans.fitting) {
    const std::string label = recompute_label(c.plan);
    const auto rung = std::find(ladder.begin(), ladder.end(), label);
    ASSERT_NE(rung, ladder.end()) << label << " is not a rung of the ladder";
    with_modules += c.plan.recompute_modules.empty() ? 0 : 1;
    int64_t previous_bytes = 0;
    for (auto lower = ladder.begin(); lower != rung; ++lower) {
      ParallelPlan cheaper = c.plan;
      ASSERT_TRUE(parse_recompute_label(*lower, cheaper));
      const int64_t bytes = busiest_stage_memory(model, cheaper).total_bytes;
      EXPECT_GT(bytes, hbm) << *lower << " would have fitted: " << describe_plan(c.plan);
      if (lower != ladder.begin()) {
        EXPECT_LT(bytes, previous_bytes) << *lower;
      }
      previous_bytes = bytes;
    }
  }
  EXPECT_GT(with_modules, 0);
  // The label reads back; a module list only with selective.
  ParallelPlan p;
  EXPECT_TRUE(parse_recompute_label("selective:mla_up_proj+moe_act", p));
  EXPECT_EQ(recompute_label(p), "selective:moe_act+mla_up_proj");
  EXPECT_FALSE(parse_recompute_label("full:mlp", p));
  EXPECT_FALSE(parse_recompute_label("selective:attn", p));
}

} // namespace
} // namespace gputwin::sim
