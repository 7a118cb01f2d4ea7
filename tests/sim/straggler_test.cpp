// Stragglers: the classes of ranks a slowdown leaves interchangeable, the unfolded programs, and
// iterations against closed forms on an ideal-compute cluster (a plain roofline: every kernel's time is known).
// The SimGrid executor allows one platform per process: one simulate_iteration per test; the DAG executor
// (same programs, any number per process) checks the rest. sim/README.md "Stragglers".
#include "gputwin/sim/isolated_run.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/pipeline_schedule.hpp"
#include "gputwin/models/rank_layout.hpp"
#include "gputwin/models/stragglers.hpp"
#include "gputwin/sim/iteration_estimate.hpp"
#include "gputwin/sim/iteration_executor.hpp"
#include "gputwin/sim/straggler_unfolding.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <map>

namespace gputwin::sim {
namespace {

// Ideal compute: efficiencies 1, no overhead, no wave quantization (nominal_roofline_model).
GpuComputeModel ideal_gpu()
{
  return nominal_roofline_model("ideal", 312e12, 2039e9, "straggler test: ideal roofline");
}

// The A100's built-in model (kernel overheads, GEMM efficiency curve, and whatever else it models).
GpuComputeModel full_speed_gpu()
{
  return builtin_compute_model(GpuGeneration::Ampere, "a100-sxm4-80gb", 312e12, 2039e9);
}

const GptConfig small_model{"straggler-test", 1024, 16, 8, 1024, 128};

ParallelPlan make_plan(int64_t tp, int64_t pp, int64_t dp, int64_t micro_batches)
{
  ParallelPlan plan;
  plan.tp = tp;
  plan.pp = pp;
  plan.dp = dp;
  plan.global_batch = micro_batches * dp;
  validate_plan(small_model, plan);
  return plan;
}

// Seconds of a stage program's kernels: one micro-batch's forward and backward, and the optimizer.
struct StageCost {
  double forward_s = 0, backward_s = 0, optimizer_s = 0;
};

StageCost stage_cost(const traces::RankProgram& program, const GpuComputeModel& gpu)
{
  StageCost c;
  for (const traces::Op& op : program.ops) {
    if (op.kind != traces::OpKind::Compute && op.kind != traces::OpKind::Memcpy)
      continue;
    const double t = compute_duration_s(gpu, op);
    if (op.phase == traces::Phase::Optimizer)
      c.optimizer_s += t;
    else if (op.micro_batch == 0)
      (op.phase == traces::Phase::Forward ? c.forward_s : c.backward_s) += t;
  }
  return c;
}

// The iteration the schedule predicts on a communication-free cluster, from the per-stage forward, backward
// and optimizer times: in each replica every step of a stage (stage_schedule order) starts when the stage's
// previous step has ended and its input has arrived (forward: the previous stage's forward of the micro-batch;
// backward: the next stage's backward); then the tied-embedding reduction waits for the replica's first and last
// stage, the DP reduction of a stage for that stage in every replica, and each rank's optimizer for both.
// speed[d][s]: speed of stage s in replica d -- the slowest rank of its TP group, which every TP collective
// waits for (with free communication that gives the iteration exactly: the slow rank is the last to arrive at
// every collective it joins, so its timeline is that of a TP group slow throughout).
double predicted_iteration_s(const ParallelPlan& plan, const std::vector<StageCost>& cost,
                             const std::vector<std::vector<double>>& speed)
{
  const PipelineShape shape = pipeline_shape(plan);
  std::vector<std::vector<double>> pipeline_end(static_cast<size_t>(plan.dp), std::vector<double>(cost.size()));
  for (int64_t d = 0; d < plan.dp; ++d) {
    const auto& f = speed[static_cast<size_t>(d)];
    std::map<std::tuple<int64_t, int, int64_t>, double> end; // (stage, phase, micro-batch) -> end
    std::vector<std::vector<PipelineStep>> steps;
    for (int64_t s = 0; s < plan.pp; ++s)
      steps.push_back(stage_schedule(shape, s));
    std::vector<size_t> next(static_cast<size_t>(plan.pp), 0);
    std::vector<double> free_s(static_cast<size_t>(plan.pp), 0);
    for (bool progress = true; progress;) {
      progress = false;
      for (int64_t s = 0; s < plan.pp; ++s) {
        const size_t si = static_cast<size_t>(s);
        while (next[si] < steps[si].size()) {
          const PipelineStep& step = steps[si][next[si]];
          const bool forward = step.phase == PipelinePhase::Forward;
          const int64_t from = forward ? s - 1 : s + 1;
          double ready = 0;
          if (from >= 0 && from < plan.pp) {
            const auto input = end.find({from, forward ? 0 : 1, step.micro_batch});
            if (input == end.end())
              break;
            ready = input->second;
          }
          const double work_s = forward ? cost[si].forward_s : cost[si].backward_s;
          free_s[si] = std::max(free_s[si], ready) + work_s / f[si];
          end[{s, forward ? 0 : 1, step.micro_batch}] = free_s[si];
          ++next[si];
          progress = true;
        }
      }
    }
    for (size_t s = 0; s < cost.size(); ++s)
      pipeline_end[static_cast<size_t>(d)][s] = free_s[s];
  }
  double iteration_s = 0;
  for (int64_t d = 0; d < plan.dp; ++d)
    for (int64_t s = 0; s < plan.pp; ++s) {
      const size_t di = static_cast<size_t>(d), si = static_cast<size_t>(s);
      double start = pipeline_end[di][si];
      if (plan.pp > 1 && (s == 0 || s == plan.pp - 1))
        start = std::max({start, pipeline_end[di][0], pipeline_end[di][static_cast<size_t>(plan.pp - 1)]});
      for (int64_t other = 0; other < plan.dp; ++other)
        start = std::max(start, pipeline_end[static_cast<size_t>(other)][si]);
      iteration_s = std::max(iteration_s, start + cost[si].optimizer_s / speed[di][si]);
    }
  return iteration_s;
}

// speed[d][s] from per-rank speeds: the slowest rank of each TP group.
std::vector<std::vector<double>> tp_group_speeds(const ParallelPlan& plan, const RankSpeeds& speeds)
{
  std::vector<std::vector<double>> speed(static_cast<size_t>(plan.dp), std::vector<double>(plan.pp, 1.0));
  for (const auto& [rank, f] : speeds) {
    const RankCoord c = rank_coord(plan, rank);
    double& s = speed[static_cast<size_t>(c.dp)][static_cast<size_t>(c.stage)];
    s = std::min(s, f);
  }
  return speed;
}

std::vector<StageCost> stage_costs(const Workload& w, const GpuComputeModel& gpu)
{
  std::vector<StageCost> cost;
  for (int64_t s = 0; s < w.plan.pp; ++s)
    cost.push_back(stage_cost(stage_program(w, s), gpu));
  return cost;
}

topo::ClusterSpec cluster_for(const ParallelPlan& plan)
{
  return topo::load_cluster("dgx-a100", static_cast<int>((plan.gpus() + 7) / 8), {});
}

double estimate_free_comm_s(const ParallelPlan& plan, const RankSpeeds& speeds)
{
  const topo::ClusterGraph graph(cluster_for(plan));
  IterationOptions options;
  options.zero_communication = true;
  return estimate_iteration(graph, make_workload(small_model, plan), ideal_gpu(), builtin_framework_profile("none"),
                            options, speeds)
      .iteration_time_s;
}

// --- classes and flags ---

TEST(StragglerClasses, OneSlowGpuSplitsItsReplicaAndTpIndex)
{
  const ParallelPlan plan = make_plan(2, 4, 4, 4);
  const int32_t slow = static_cast<int32_t>(global_rank(plan, {2, 1, 1}));
  const StragglerClasses c = straggler_classes(plan, {{slow, 0.5}});
  EXPECT_EQ(c.replicas, (std::vector<std::vector<int64_t>>{{0, 2, 3}, {1}}));
  EXPECT_EQ(c.tp_indices, (std::vector<std::vector<int64_t>>{{0}, {1}}));
  const StragglerClasses none = straggler_classes(plan, {});
  EXPECT_EQ(none.replicas, (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}}));
  EXPECT_EQ(none.tp_indices, (std::vector<std::vector<int64_t>>{{0, 1}}));
}

TEST(StragglerClasses, SlowNodeHoldingWholeTpGroupsKeepsTpFolded)
{
  // tp 4 x dp 4 x pp 2 on 8-GPU nodes: node 1 holds replicas 2 and 3 of stage 0, all their TP ranks.
  const ParallelPlan plan = make_plan(4, 2, 4, 4);
  Stragglers s;
  s.nodes.push_back({1, 0.8});
  const RankSpeeds speeds = rank_speeds(s, plan.gpus(), 8);
  ASSERT_EQ(speeds.size(), 8u);
  const StragglerClasses c = straggler_classes(plan, speeds);
  EXPECT_EQ(c.replicas, (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(c.tp_indices.size(), 1u);
}

TEST(Stragglers, GpuAndNodeFactorsMultiply)
{
  Stragglers s;
  s.gpus.push_back({9, 0.5});
  s.gpus.push_back({3, 1.0});
  s.nodes.push_back({1, 0.8});
  const RankSpeeds speeds = rank_speeds(s, 16, 8);
  EXPECT_EQ(speeds.size(), 8u); // rank 3 at factor 1 is not slow
  EXPECT_DOUBLE_EQ(speeds.at(9), 0.4);
  EXPECT_DOUBLE_EQ(speeds.at(15), 0.8);
  EXPECT_EQ(speeds.count(3), 0u);
}

void expect_input_error(const std::function<void()>& f, const std::string& flag)
{
  try {
    f();
    ADD_FAILURE() << "no InputError for " << flag;
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind(flag, 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(Stragglers, BadInputIsAOneLineErrorNamingTheFlag)
{
  for (const char* text :
       {"0=0", "0=-0.5", "0=1.5", "0=nan", "0=inf", "0", "=0.5", "0=", "a=0.5", "-1=0.5", "0=0.5x", "0:0.5", "0= 0.5"})
    expect_input_error([&] { parse_slow_gpu("--slow-gpu", text); }, "--slow-gpu");
  expect_input_error([] { parse_slow_node("--slow-node", "1=0"); }, "--slow-node");
  Stragglers out_of_range;
  out_of_range.gpus.push_back({16, 0.5});
  expect_input_error([&] { rank_speeds(out_of_range, 16, 8); }, "--slow-gpu");
  Stragglers no_node;
  no_node.nodes.push_back({2, 0.5});
  expect_input_error([&] { rank_speeds(no_node, 16, 8); }, "--slow-node");
  Stragglers twice;
  twice.gpus = {{1, 0.5}, {1, 0.7}};
  expect_input_error([&] { rank_speeds(twice, 16, 8); }, "--slow-gpu");
  EXPECT_DOUBLE_EQ(parse_slow_gpu("--slow-gpu", "7=0.25").factor, 0.25);
  EXPECT_DOUBLE_EQ(parse_slow_gpu("--slow-gpu", "7=1e-6").factor, 1e-6);
}

// Factors below the floor (1e-6), alone or as a product that underflows: a one-line error, never a timeout that
// is not finite in SimGrid or "inf s" from the estimate (issue 30).
TEST(Stragglers, FactorsAndProductsBelowTheFloorAreInputErrors)
{
  for (const char* text : {"0=4.9e-324", "0=1e-300", "0=9e-7", "0=0x1p-2", "0=+inf"})
    expect_input_error([&] { parse_slow_gpu("--slow-gpu", text); }, "--slow-gpu");
  expect_input_error([] { parse_slow_node("--slow-node", "0=1e-300"); }, "--slow-node");
  Stragglers product;
  product.nodes.push_back({0, 1e-3});
  product.gpus.push_back({0, 1e-4}); // 1e-7 together
  expect_input_error([&] { rank_speeds(product, 16, 8); }, "--slow-gpu: rank 0 runs at GPU factor x node factor");
  product.gpus[0].factor = 1e-3; // 1e-6: at the floor
  EXPECT_DOUBLE_EQ(rank_speeds(product, 16, 8).at(0), 1e-6);
  EXPECT_EQ(parse_slow_node("--slow-node", "3=1").node, 3);
}

// --- the unfolded programs ---

TEST(StragglerUnfolding, ProgramsGroupsAndPeers)
{
  const ParallelPlan plan = make_plan(2, 2, 2, 2);
  const Workload w = make_workload(small_model, plan);
  const topo::ClusterGraph graph(cluster_for(plan));
  const int32_t slow = static_cast<int32_t>(global_rank(plan, {1, 1, 1})); // stage 1, replica 1, tp 1
  StragglerUnfolding u(graph, w, {{slow, 0.5}});
  ASSERT_EQ(u.programs_per_stage(), 4u);
  const std::vector<traces::RankProgram> programs = u.unfold({stage_program(w, 0), stage_program(w, 1)});
  ASSERT_EQ(programs.size(), 8u);
  // Program order: stage, replica class, tp class; each runs as its class's first rank.
  for (size_t p = 0; p < programs.size(); ++p) {
    const RankCoord c = rank_coord(plan, programs[p].rank);
    EXPECT_EQ(c.stage, static_cast<int64_t>(p / 4));
    EXPECT_EQ(c.dp, static_cast<int64_t>((p % 4) / 2));
    EXPECT_EQ(c.tp, static_cast<int64_t>(p % 2));
    EXPECT_EQ(u.ranks_of(p), 1);
    EXPECT_EQ(u.speed_of(p), programs[p].rank == slow ? 0.5 : 1.0);
  }
  // Every collective's group holds its program, a TP group the programs of its replica class only, a DP group
  // those of its tp class in every replica class; every pipeline peer is the same classes' program.
  for (const traces::RankProgram& program : programs) {
    const RankCoord me = rank_coord(plan, program.rank);
    for (const traces::Op& op : program.ops) {
      if (op.kind == traces::OpKind::Collective) {
        const traces::CommGroup& g = u.groups().at(static_cast<size_t>(op.group));
        EXPECT_NE(std::find(g.ranks.begin(), g.ranks.end(), program.rank), g.ranks.end());
        for (const int32_t r : g.ranks) {
          const RankCoord c = rank_coord(plan, r);
          if (g.kind == "tp") {
            EXPECT_TRUE(c.stage == me.stage && c.dp == me.dp);
          }
          if (g.kind == "dp") {
            EXPECT_TRUE(c.stage == me.stage && c.tp == me.tp);
          }
        }
      } else if (op.is_communication()) {
        const RankCoord peer = rank_coord(plan, op.peer);
        EXPECT_EQ(peer.dp, me.dp);
        EXPECT_EQ(peer.tp, me.tp);
        EXPECT_EQ(std::abs(peer.stage - me.stage), 1);
      }
    }
  }
  // The message of one class carries its copies only: replica 1, tp 1 is one GPU pair.
  const traces::Op* send = nullptr;
  for (const traces::Op& op : programs[3].ops)
    if (op.kind == traces::OpKind::Send && !send)
      send = &op;
  ASSERT_NE(send, nullptr);
  EXPECT_EQ(u.message(programs[3].rank, *send).copies, 1);
}

// Unfolding at factor 1 (a class split that changes no speed) reproduces the folded estimate, communication and
// link sharing included: the classes' copies put the same flows on the same links at the same times.
TEST(StragglerUnfolding, AtFullSpeedMatchesTheFoldedEstimate)
{
  const ParallelPlan plan = make_plan(2, 2, 4, 4); // 16 GPUs: two nodes, DP and pipeline across them
  const topo::ClusterGraph graph(cluster_for(plan));
  const Workload w = make_workload(small_model, plan);
  const FrameworkProfile host = builtin_framework_profile("megatron-lm");
  const double folded = estimate_iteration(graph, w, full_speed_gpu(), host).iteration_time_s;
  const int32_t rank = static_cast<int32_t>(global_rank(plan, {1, 2, 1}));
  const IterationResult unfolded = estimate_iteration(graph, w, full_speed_gpu(), host, {}, {{rank, 1.0}});
  EXPECT_EQ(unfolded.programs.size(), 8u);
  EXPECT_NEAR(unfolded.iteration_time_s, folded, 1e-9 * folded);
}

// The same on the SimGrid executor, flows and host model included (the folded run in a process of its own: one
// platform per process).
TEST(StragglerUnfolding, AtFullSpeedMatchesTheFoldedSimulation)
{
  const ParallelPlan plan = make_plan(2, 2, 4, 4);
  const topo::ClusterGraph graph(cluster_for(plan));
  const Workload w = make_workload(small_model, plan);
  const FrameworkProfile host = builtin_framework_profile("megatron-lm");
  const double folded = std::stod(sim::run_isolated(1, 1, [&](size_t) {
    char text[32]; // exact: 17 significant digits
    std::snprintf(text, sizeof text, "%.17g", simulate_iteration(graph, w, full_speed_gpu(), {}, host).iteration_time_s);
    return std::string(text);
  })[0]);
  const int32_t rank = static_cast<int32_t>(global_rank(plan, {1, 2, 1}));
  const IterationResult unfolded = simulate_iteration(graph, w, full_speed_gpu(), {}, host, {{rank, 1.0}});
  EXPECT_EQ(unfolded.programs.size(), 8u);
  EXPECT_GT(folded, 0);
  EXPECT_NEAR(unfolded.iteration_time_s, folded, 1e-9 * folded);
}

// --- iterations against closed forms ---

// pp 1 x dp 8, one GPU at half speed, on the SimGrid executor with communication: the slow replica's compute is
// exactly twice its kernels' time, the others' unchanged; every replica waits for it at the gradient all-reduce.
TEST(Stragglers, SlowDataParallelGpuDoublesTheComputePart)
{
  const ParallelPlan plan = make_plan(1, 1, 8, 2);
  const topo::ClusterGraph graph(cluster_for(plan));
  const Workload w = make_workload(small_model, plan);
  const GpuComputeModel gpu = ideal_gpu();
  double kernels_s = 0; // the stage's kernels on the compute stream, at full speed
  for (const traces::Op& op : stage_program(w, 0).ops)
    if (op.kind == traces::OpKind::Compute && op.stream == 0)
      kernels_s += compute_duration_s(gpu, op);
  const IterationResult r = simulate_iteration(graph, w, gpu, {}, builtin_framework_profile("none"), {{0, 0.5}});
  ASSERT_EQ(r.programs.size(), 2u); // rank 0, and the 7 healthy replicas
  EXPECT_EQ(r.programs[1].rank, 1);
  EXPECT_NEAR(r.stages[0].compute_s, 2 * kernels_s, 1e-12 * kernels_s);
  EXPECT_NEAR(r.stages[1].compute_s, kernels_s, 1e-12 * kernels_s);
  // The healthy replicas wait for the slow one at the all-reduce: their exposed communication grows by the
  // slow replica's extra compute before it (all but the optimizer step's ops after the reduction).
  double optimizer_s = 0;
  bool after_reduction = false;
  for (const traces::Op& op : stage_program(w, 0).ops) {
    after_reduction = after_reduction || op.name == "dp.all_reduce";
    if (after_reduction && op.kind == traces::OpKind::Compute)
      optimizer_s += compute_duration_s(gpu, op);
  }
  EXPECT_GT(optimizer_s, 0);
  EXPECT_NEAR(r.stages[1].exposed_comm_s - r.stages[0].exposed_comm_s, kernels_s - optimizer_s, 1e-9 * kernels_s);
  EXPECT_NEAR(r.iteration_time_s, 2 * kernels_s + r.stages[0].exposed_comm_s, 1e-9 * kernels_s);
}

// The same without communication, on the DAG executor: the whole iteration is exactly twice as long.
TEST(Stragglers, SlowDataParallelGpuDoublesTheIterationWithoutCommunication)
{
  const ParallelPlan plan = make_plan(1, 1, 8, 2);
  const double healthy = estimate_free_comm_s(plan, {});
  EXPECT_DOUBLE_EQ(estimate_free_comm_s(plan, {{0, 0.5}}), 2 * healthy);
  EXPECT_DOUBLE_EQ(estimate_free_comm_s(plan, {{5, 0.25}}), 4 * healthy);
}

// 1F1B, pp 4, 8 micro-batches: a GPU of stage 2 at half speed stretches the iteration by what the schedule
// predicts from the per-stage forward/backward times -- on the SimGrid executor, with TP and DP: the slow GPU
// is tp 1 of replica 1, so its TP peer waits at every TP collective and replica 0 at every DP reduction.
TEST(Stragglers, SlowStageOfOneFOneBStretchesAsTheSchedulePredicts)
{
  const ParallelPlan plan = make_plan(2, 4, 2, 8);
  const topo::ClusterGraph graph(cluster_for(plan));
  const Workload w = make_workload(small_model, plan);
  const GpuComputeModel gpu = ideal_gpu();
  const std::vector<StageCost> cost = stage_costs(w, gpu);
  const RankSpeeds slow{{static_cast<int32_t>(global_rank(plan, {2, 1, 1})), 0.5}};
  const double healthy_s = predicted_iteration_s(plan, cost, tp_group_speeds(plan, {}));
  const double predicted_s = predicted_iteration_s(plan, cost, tp_group_speeds(plan, slow));
  EXPECT_GT(predicted_s - healthy_s, 0.1 * healthy_s);
  EXPECT_NEAR(estimate_free_comm_s(plan, {}), healthy_s, 1e-9 * healthy_s); // the recurrence is the schedule's
  IterationOptions options;
  options.zero_communication = true;
  const IterationResult r = simulate_iteration(graph, w, gpu, options, builtin_framework_profile("none"), slow);
  EXPECT_EQ(r.programs.size(), 16u); // 4 stages x (replica 1 or 0) x (tp 1 or 0)
  EXPECT_NEAR(r.iteration_time_s, predicted_s, 1e-9 * predicted_s);
}

// The same on the DAG executor, and stragglers in different replicas and stages: unfolding keeps each replica's
// own slow stage (exact), where slowing whole stages would stack both in every replica (too slow).
TEST(Stragglers, OneFOneBEstimateMatchesTheSchedule)
{
  const ParallelPlan single = make_plan(1, 4, 1, 8);
  const Workload w1 = make_workload(small_model, single);
  const std::vector<StageCost> cost1 = stage_costs(w1, ideal_gpu());
  const RankSpeeds stage2{{2, 0.5}};
  const double p1 = predicted_iteration_s(single, cost1, tp_group_speeds(single, stage2));
  EXPECT_NEAR(estimate_free_comm_s(single, stage2), p1, 1e-9 * p1);

  const ParallelPlan plan = make_plan(2, 4, 2, 8);
  const std::vector<StageCost> cost = stage_costs(make_workload(small_model, plan), ideal_gpu());
  const RankSpeeds two{{static_cast<int32_t>(global_rank(plan, {1, 0, 0})), 0.5},
                       {static_cast<int32_t>(global_rank(plan, {2, 1, 1})), 0.5}};
  const double exact_s = predicted_iteration_s(plan, cost, tp_group_speeds(plan, two));
  EXPECT_NEAR(estimate_free_comm_s(plan, two), exact_s, 1e-9 * exact_s);
  const std::vector<std::vector<double>> stage_wide(2, std::vector<double>{1.0, 0.5, 0.5, 1.0});
  EXPECT_GT(predicted_iteration_s(plan, cost, stage_wide), exact_s * 1.01);
}

} // namespace
} // namespace gputwin::sim
