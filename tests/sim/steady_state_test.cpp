// The steady-state shortcut (sim/estimator steady_state.hpp) against executing every micro-batch: the same iteration
// time and stage figures to 1e-9 relative over 1F1B and interleaved schedules, context parallelism, the
// Megatron-Core overlaps, ZeRO-3, FP8 on Hopper with its host, stragglers, interference and a MoE model -- each case
// also required to have taken the shortcut, so that the comparison is not of a run with itself. Then the rules: no
// shortcut where the periods do not repeat (a run whose time is quadratic in micro-batches) or add different
// figures, where the sample would cost more than 3/4 of the iteration, with GPipe (stages drift apart), with a timeline, with GPUTWIN_EXACT set.
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/iteration_estimate.hpp"
#include "gputwin/sim/iteration_executor.hpp"
#include "gputwin/sim/scenario.hpp"
#include "gputwin/sim/steady_state.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace gputwin::sim {
namespace {

struct Case {
  std::string name;
  std::string model = "gpt-22b";
  std::string cluster = "dgx-a100";
  std::string framework = "megatron-lm";
  std::function<void(GptConfig&, ParallelPlan&, WorkloadOptions&)> shape;
  RankSpeeds speeds{};
  // False where no period is common to all programs: the run must then be executed whole, with the same answer.
  bool shortcut = true;
};

// The case with and without the shortcut, on the smallest cluster that holds it (8 layers keep each run short).
struct RunPair {
  IterationResult shortcut, whole;
};

// `link_usage`: both runs also report every link's usage (IterationOptions::link_usage; the flow level only).
RunPair run_case(const Case& c, bool simgrid = false, bool link_usage = false)
{
  GptConfig model = find_catalog_model(c.model)->model;
  ParallelPlan plan;
  plan.tp = 2;
  plan.pp = 4;
  plan.dp = 2;
  plan.micro_batch = 1;
  plan.tp_comm = TpComm::SequenceParallel;
  plan.recompute = Recompute::Selective;
  plan.zero_stage = 1;
  WorkloadOptions options;
  model.layers = 8;
  c.shape(model, plan, options);
  validate_plan(model, plan);
  const topo::ClusterSpec cluster = topo::load_cluster(
      c.cluster, static_cast<int>(nodes_needed(plan, topo::load_cluster(c.cluster, 1, {}))), {});
  const topo::ClusterGraph graph(cluster);
  const GpuComputeModel gpu = builtin_gpu_model(cluster.gpu);
  const FrameworkProfile framework = builtin_framework_profile(c.framework);
  const Workload workload = make_workload(model, plan, options);
  IterationOptions shortcut, whole;
  whole.steady_state = false;
  shortcut.link_usage = whole.link_usage = link_usage;
  if (simgrid) // the sample in a child process first, then the whole iteration in this one (one SimGrid per process)
    return {simulate_iteration(graph, workload, gpu, shortcut, framework, c.speeds),
            simulate_iteration(graph, workload, gpu, whole, framework, c.speeds)};
  return {estimate_iteration(graph, workload, gpu, framework, {}, c.speeds),
          estimate_iteration(graph, workload, gpu, framework, whole, c.speeds)};
}

void expect_near(double shortcut, double whole, double scale, const std::string& what)
{
  EXPECT_NEAR(shortcut, whole, 1e-9 * scale) << what;
}

std::vector<Case> cases()
{
  std::vector<Case> c;
  c.push_back({"1f1b", "gpt-22b", "dgx-a100", "megatron-lm", [](GptConfig&, ParallelPlan& p, WorkloadOptions&) {
                 p.global_batch = 2 * 240;
               }});
  c.push_back({"1f1b-full-recompute-no-host", "gpt-22b", "dgx-a100", "none",
               [](GptConfig&, ParallelPlan& p, WorkloadOptions&) {
                 p.recompute = Recompute::Full;
                 p.global_batch = 2 * 237;
               }});
  c.push_back({"interleaved", "gpt-22b", "dgx-a100", "megatron-lm", [](GptConfig&, ParallelPlan& p, WorkloadOptions&) {
                 p.schedule = Schedule::Interleaved;
                 p.chunks = 2;
                 p.global_batch = 2 * 320;
               }});
  c.push_back({"cp-overlaps-fp8-hopper", "llama3-8b", "dgx-h100", "megatron-core",
               [](GptConfig& m, ParallelPlan& p, WorkloadOptions& o) {
                 m.seq_len = 8192;
                 p.cp = 2;
                 p.attention = AttentionKernel::Flash;
                 p.precision = GemmPrecision::Fp8;
                 p.global_batch = 2 * 240;
                 o = applicable_overlaps(p);
               }});
  c.push_back({"interleaved-overlaps-hopper", "gpt-22b", "dgx-h100", "megatron-core",
               [](GptConfig&, ParallelPlan& p, WorkloadOptions& o) {
                 p.schedule = Schedule::Interleaved;
                 p.chunks = 2;
                 p.global_batch = 2 * 320;
                 o = applicable_overlaps(p);
               }});
  c.push_back({"zero3-no-pipeline", "gpt-22b", "dgx-a100", "megatron-lm", [](GptConfig&, ParallelPlan& p, WorkloadOptions&) {
                 p.pp = 1;
                 p.dp = 4;
                 p.zero_stage = 3;
                 p.global_batch = 4 * 40;
               }});
  c.push_back({"stragglers-in-one-pipeline", "gpt-22b", "dgx-a100", "megatron-lm",
               [](GptConfig&, ParallelPlan& p, WorkloadOptions&) {
                 p.dp = 1;
                 p.global_batch = 240;
               },
               RankSpeeds{{1, 0.8}, {6, 0.9}}});
  // One replica slowed: the two pipelines run at different paces until the gradient reduction joins them, so no
  // period is common to all programs (each replica's own repeats).
  c.push_back({"straggler-in-one-replica", "gpt-22b", "dgx-a100", "megatron-lm",
               [](GptConfig&, ParallelPlan& p, WorkloadOptions&) { p.global_batch = 2 * 240; },
               RankSpeeds{{5, 0.8}}, false});
  c.push_back({"moe-ep", "mixtral-8x7b", "dgx-h100", "megatron-core",
               [](GptConfig& m, ParallelPlan& p, WorkloadOptions&) {
                 m.seq_len = 1024;
                 p.ep = 4;
                 p.etp = 1;
                 p.moe_imbalance_cv = 0.3;
                 p.global_batch = 2 * 240;
               }});
  return c;
}

void expect_same_figures(const Case& c, const RunPair& r)
{
  if (c.shortcut)
    EXPECT_GT(r.shortcut.extrapolated_micro_batches, 0) << "the shortcut did not apply";
  else
    EXPECT_EQ(r.shortcut.extrapolated_micro_batches, 0) << "a shortcut without a common period";
  EXPECT_EQ(r.whole.extrapolated_micro_batches, 0);
  const double t = r.whole.iteration_time_s;
  std::printf("%-30s %.12f s whole, %.12f s shortcut (%lld micro-batches extrapolated), rel %.2e\n", c.name.c_str(), t,
              r.shortcut.iteration_time_s, static_cast<long long>(r.shortcut.extrapolated_micro_batches),
              std::abs(r.shortcut.iteration_time_s - t) / t);
  expect_near(r.shortcut.iteration_time_s, t, t, "iteration time");
  EXPECT_EQ(r.shortcut.executed_ops, r.whole.executed_ops);
  EXPECT_EQ(r.shortcut.simulated_flows, r.whole.simulated_flows);
  ASSERT_EQ(r.shortcut.stages.size(), r.whole.stages.size());
  for (size_t s = 0; s < r.whole.stages.size(); ++s) {
    const StageTimes &a = r.shortcut.stages[s], &b = r.whole.stages[s];
    const std::string stage = "stage " + std::to_string(s);
    expect_near(a.compute_s, b.compute_s, t, stage + " compute");
    expect_near(a.exposed_comm_s, b.exposed_comm_s, t, stage + " exposed communication");
    expect_near(a.pipeline_start_s, b.pipeline_start_s, t, stage + " pipeline start");
    expect_near(a.pipeline_end_s, b.pipeline_end_s, t, stage + " pipeline end");
    expect_near(a.pipeline_compute_s, b.pipeline_compute_s, t, stage + " pipeline compute");
    expect_near(a.pipeline_comm_s, b.pipeline_comm_s, t, stage + " pipeline communication");
    expect_near(a.moe_exchange_s, b.moe_exchange_s, t, stage + " MoE exchange");
  }
}

TEST(SteadyState, SameFiguresAsEveryMicroBatchExecuted)
{
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    expect_same_figures(c, run_case(c));
  }
}

// The flow-level executor: the sample simulated in a child process, every flow of them on SimGrid; each case in a
// test of its own (one SimGrid platform per process).
void expect_flow_level_same(const std::string& name)
{
  for (const Case& c : cases())
    if (c.name == name) {
      expect_same_figures(c, run_case(c, true));
      return;
    }
  FAIL() << "no case " << name;
}

// Every link's bytes, flows and busy time (IterationOptions::link_usage) from the sample and its period's growth
// (steady_link_usage.hpp) against the whole iteration's flows: counts exactly, bytes and busy times to 1e-9.
void expect_same_link_usage(const std::string& name)
{
  for (const Case& c : cases())
    if (c.name == name) {
      const RunPair r = run_case(c, true, true);
      expect_same_figures(c, r);
      ASSERT_TRUE(r.shortcut.link_usage && r.whole.link_usage);
      const LinkUsage &a = *r.shortcut.link_usage, &b = *r.whole.link_usage;
      const double t = r.whole.iteration_time_s;
      EXPECT_GT(b.links.size(), 0u);
      EXPECT_EQ(a.flows, b.flows);
      EXPECT_NEAR(a.flow_bytes, b.flow_bytes, 1e-9 * b.flow_bytes);
      EXPECT_NEAR(a.inter_domain_bytes, b.inter_domain_bytes, 1e-9 * b.flow_bytes);
      EXPECT_GT(b.inter_domain_bytes, 0) << "no flow between nodes: the fabric's links untested";
      ASSERT_EQ(a.links.size(), b.links.size());
      for (size_t i = 0; i < a.links.size(); ++i) {
        SCOPED_TRACE("link " + std::to_string(b.links[i].link));
        EXPECT_EQ(a.links[i].link, b.links[i].link);
        EXPECT_EQ(a.links[i].flows, b.links[i].flows);
        EXPECT_NEAR(a.links[i].bytes, b.links[i].bytes, 1e-9 * b.links[i].bytes);
        EXPECT_NEAR(a.links[i].busy_s, b.links[i].busy_s, 1e-9 * t);
      }
      return;
    }
  FAIL() << "no case " << name;
}

TEST(SteadyState, FlowLevel1f1b) { expect_flow_level_same("1f1b"); }
TEST(SteadyState, LinkUsage1f1b) { expect_same_link_usage("1f1b"); }
TEST(SteadyState, LinkUsageMoe) { expect_same_link_usage("moe-ep"); }
TEST(SteadyState, FlowLevelInterleavedOverlapsOnHopper) { expect_flow_level_same("interleaved-overlaps-hopper"); }
TEST(SteadyState, FlowLevelMoe) { expect_flow_level_same("moe-ep"); }

Workload small_workload(int64_t micro_batches, Schedule schedule = Schedule::OneFOneB)
{
  GptConfig model = find_catalog_model("gpt-22b")->model;
  model.layers = 8;
  ParallelPlan plan;
  plan.tp = 1;
  plan.pp = 4;
  plan.dp = 1;
  plan.schedule = schedule;
  plan.chunks = schedule == Schedule::Interleaved ? 2 : 1;
  plan.global_batch = micro_batches;
  return make_workload(model, plan);
}

// A stand-in executor: one program of two ops per micro-batch, micro-batch i starting at 0.25 i (or 0.25 i^2) and
// the iteration ending 3 s after the last; the figures grow with m alike, each micro-batch's ops adding 0.2 s of
// compute (with `uneven_shares`, 0.2 + 0.001 i s: the times repeat, the compute does not). With `transient` t,
// micro-batches before t start 0.1 s early, so the run repeats from t on. Counts the runs and their sizes.
struct FakeRun {
  bool quadratic = false;
  bool uneven_shares = false;
  int64_t transient = 0;
  std::vector<int64_t> sizes;
  IterationResult operator()(const Workload& w, const IterationOptions& options)
  {
    const int64_t micro_batches = w.plan.micro_batches();
    const auto start_s = [this](int64_t i) {
      return 0.25 * static_cast<double>(quadratic ? i * i : i) - (i < transient ? 0.1 : 0);
    };
    sizes.push_back(micro_batches);
    IterationResult r;
    r.iteration_time_s = 3 + start_s(micro_batches);
    r.executed_ops = 10 + 2 * micro_batches;
    r.stages.resize(1);
    r.programs.resize(1);
    for (int64_t i = 0; i < micro_batches; ++i) {
      const double compute_s = 0.2 + (uneven_shares ? 0.001 * static_cast<double>(i) : 0);
      r.stages[0].compute_s += compute_s;
      if (options.record_micro_batch_shares)
        r.stages[0].by_micro_batch.push_back(MicroBatchShare{compute_s, 0, 0, 0, 0, 2, 0, 0});
      for (const char* name : {"f", "b"}) {
        traces::Op op;
        op.id = static_cast<int64_t>(r.programs[0].ops.size());
        op.name = name;
        op.micro_batch = static_cast<int32_t>(i);
        r.programs[0].ops.push_back(op);
        const double begin_s = start_s(i) + (name[0] == 'b' ? 0.1 : 0);
        if (options.record_timeline)
          r.timeline.push_back({0, op.id, begin_s, begin_s + 0.1});
      }
    }
    return r;
  }
};

TEST(SteadyState, AffineFiguresAreExtrapolatedFromOneRun)
{
  FakeRun fake;
  const IterationResult r = run_with_steady_state(small_workload(400), {}, std::ref(fake));
  // 3 warm-ups (3 pp), the max(8, pp / 2) micro-batches 1F1B may take past its warm-up to repeat and two periods
  EXPECT_EQ(fake.sizes, (std::vector<int64_t>{22}));
  EXPECT_DOUBLE_EQ(r.iteration_time_s, 3 + 0.25 * 400);
  EXPECT_EQ(r.executed_ops, 10 + 2 * 400);
  EXPECT_TRUE(r.timeline.empty()); // the sample's, recorded for the check, is not the iteration's
  EXPECT_TRUE(r.stages[0].by_micro_batch.empty());
  EXPECT_NEAR(r.stages[0].compute_s, 0.2 * 400, 1e-12);
  EXPECT_EQ(r.extrapolated_micro_batches, 400 - 22);
}

TEST(SteadyState, ALongerTransientLengthensTheRunByWhatTheRepeatFellShortOf)
{
  FakeRun fake;
  fake.transient = 15; // repeats from micro-batch 15: the run of 22 repeats over 22 - pp - 1 - 15 = 2 < pp + 1
  const IterationResult r = run_with_steady_state(small_workload(400), {}, std::ref(fake));
  // Short by 5 - 2 = 3 micro-batches: the next run is 22 + 3.
  EXPECT_EQ(fake.sizes, (std::vector<int64_t>{22, 25}));
  EXPECT_DOUBLE_EQ(r.iteration_time_s, 3 + 0.25 * 400);
  EXPECT_EQ(r.extrapolated_micro_batches, 400 - 25);
}

TEST(SteadyState, InterleavedStepsByWholePipelineRounds)
{
  FakeRun fake;
  run_with_steady_state(small_workload(400, Schedule::Interleaved), {}, std::ref(fake));
  // warm-up: 2 (pp - 1) + (chunks - 1) pp = 10 chunk steps touch two groups of pp = 8 micro-batches: 3 x 8 + 2 x 4
  EXPECT_EQ(fake.sizes, (std::vector<int64_t>{32}));
}

TEST(SteadyState, PeriodsThatAddDifferentFiguresMeanTheWholeIteration)
{
  FakeRun fake;
  fake.uneven_shares = true; // the ops repeat, their compute grows: no figure may be extrapolated
  const IterationResult r = run_with_steady_state(small_workload(400), {}, std::ref(fake));
  ASSERT_FALSE(fake.sizes.empty());
  EXPECT_EQ(fake.sizes.back(), 400);
  EXPECT_EQ(r.extrapolated_micro_batches, 0);
  EXPECT_NEAR(r.stages[0].compute_s, 0.2 * 400 + 0.001 * 399 * 400 / 2, 1e-9);
}

TEST(SteadyState, NoPeriodMeansTheWholeIteration)
{
  FakeRun fake;
  fake.quadratic = true;
  const IterationResult r = run_with_steady_state(small_workload(400), {}, std::ref(fake));
  // A run of 22, then longer (by the shortfall of the one repeating pair, then doubling) until it would cost 3/4
  // of the iteration; then all 400.
  ASSERT_FALSE(fake.sizes.empty());
  EXPECT_EQ(fake.sizes.back(), 400);
  EXPECT_EQ(r.extrapolated_micro_batches, 0);
  EXPECT_DOUBLE_EQ(r.iteration_time_s, 3 + 0.25 * 400 * 400);
  int64_t sampled = 0;
  for (size_t i = 0; i + 1 < fake.sizes.size(); ++i)
    sampled += fake.sizes[i];
  EXPECT_LE(sampled, 600); // the failed attempts cost at most half as much again as the iteration
}

TEST(SteadyState, OffWhereItCannotPayOrSomethingNeedsEveryOp)
{
  FakeRun few;
  run_with_steady_state(small_workload(28), {}, std::ref(few)); // 22 > 3/4 x 28
  EXPECT_EQ(few.sizes, (std::vector<int64_t>{28}));
  FakeRun gpipe;
  run_with_steady_state(small_workload(400, Schedule::GPipe), {}, std::ref(gpipe));
  EXPECT_EQ(gpipe.sizes, (std::vector<int64_t>{400}));
  FakeRun timeline;
  IterationOptions options;
  options.record_timeline = true;
  run_with_steady_state(small_workload(400), options, std::ref(timeline));
  EXPECT_EQ(timeline.sizes, (std::vector<int64_t>{400}));
  FakeRun exact;
  ::setenv("GPUTWIN_EXACT", "1", 1);
  EXPECT_FALSE(shortcuts_enabled());
  run_with_steady_state(small_workload(400), {}, std::ref(exact));
  ::unsetenv("GPUTWIN_EXACT");
  EXPECT_TRUE(shortcuts_enabled());
  EXPECT_EQ(exact.sizes, (std::vector<int64_t>{400}));
}

} // namespace
} // namespace gputwin::sim
