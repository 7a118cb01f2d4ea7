// Megatron-Core's EP all-to-all overlap in the generated programs (combined_step.hpp, --overlap-moe-expert-parallel-
// comm): which steps combine (pp 1: each backward with the next micro-batch's forward; interleaved: the 1F1B
// phase after one extra warm-up forward), the issue order inside a combined step as TransformerLayerSchedulePlan.run
// gives it, the token exchanges on their own stream with their data dependencies, and a program that is still a
// program (ids its indices, every dependency on an earlier op, the same ops as without the overlap).
#include "gputwin/models/combined_step.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/pipeline_schedule.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/common/input_error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace gputwin {
namespace {

GptConfig two_moe_layers()
{
  const CatalogEntry* e = find_catalog_model("qwen3-30b-a3b");
  GptConfig m = e->model;
  m.layers = 2;
  return m;
}

ParallelPlan ep_plan(int64_t pp = 1, Schedule schedule = Schedule::OneFOneB, int64_t chunks = 1)
{
  ParallelPlan p;
  p.ep = 4;
  p.dp = 4;
  p.pp = pp;
  p.schedule = schedule;
  p.chunks = chunks;
  p.global_batch = 4 * 4;
  p.zero_stage = 1;
  p.attention = AttentionKernel::Flash;
  return p;
}

traces::RankProgram program(const ParallelPlan& plan, bool overlap, int64_t stage = 0)
{
  WorkloadOptions options;
  options.moe_a2a_overlap = overlap;
  return stage_program(make_workload(two_moe_layers(), plan, options), stage);
}

bool is_exchange(const traces::Op& op)
{
  return op.name == "moe.dispatch" || op.name == "moe.combine" || op.name == "moe.combine.bwd" ||
         op.name == "moe.dispatch.bwd";
}

// A program's invariants: ids are indices, dependencies point back, each exchange is on ep_stream after the compute
// op that produces its tokens.
void expect_well_formed(const traces::RankProgram& p)
{
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const traces::Op& op = p.ops[i];
    ASSERT_EQ(op.id, static_cast<int64_t>(i));
    for (const int64_t d : op.deps)
      EXPECT_LT(d, op.id) << op.name << " waits for a later op";
  }
}

TEST(CombinedStep, NoPipeliningPairsEachBackwardWithTheNextForward)
{
  const traces::RankProgram plain = program(ep_plan(), false), combined = program(ep_plan(), true);
  ASSERT_EQ(plain.ops.size(), combined.ops.size());
  expect_well_formed(combined);
  // The same ops, reordered: names and micro-batches as a multiset.
  std::map<std::pair<std::string, int32_t>, int> count;
  for (const traces::Op& op : plain.ops)
    ++count[{op.name, op.micro_batch}];
  for (const traces::Op& op : combined.ops)
    --count[{op.name, op.micro_batch}];
  for (const auto& [key, n] : count)
    EXPECT_EQ(n, 0) << key.first << " of micro-batch " << key.second;
  // Micro-batch 0's forward runs alone; from then on forward ops of micro-batch k + 1 sit between backward ops of
  // micro-batch k (4 micro-batches: three combined steps), and the last backward runs alone.
  std::vector<std::pair<int32_t, traces::Phase>> switches;
  for (const traces::Op& op : combined.ops)
    if (op.micro_batch >= 0 && (switches.empty() || switches.back() != std::pair{op.micro_batch, op.phase}))
      switches.push_back({op.micro_batch, op.phase});
  EXPECT_EQ(switches.front(), (std::pair{0, traces::Phase::Forward}));
  EXPECT_GT(switches.size(), 3u * 2 * 2 * 2); // each combined step switches at least twice per layer pair
  EXPECT_EQ(switches.back(), (std::pair{3, traces::Phase::Backward}));
  int exchanges = 0;
  for (const traces::Op& op : combined.ops) {
    const bool alone = (op.micro_batch == 0 && op.phase == traces::Phase::Forward) ||
                       (op.micro_batch == 3 && op.phase == traces::Phase::Backward);
    if (!is_exchange(op) || alone) // the steps that run alone keep their exchanges on the compute stream
      continue;
    ++exchanges;
    EXPECT_EQ(op.stream, ep_stream) << op.name;
    ASSERT_FALSE(op.deps.empty()) << op.name << " waits for the compute op before it";
    EXPECT_EQ(combined.ops[static_cast<size_t>(op.deps.back())].stream, compute_stream);
  }
  EXPECT_EQ(exchanges, 3 * 4 * 2); // three combined steps, four exchanges per layer pair, two layers
  for (const traces::Op& op : plain.ops) {
    if (is_exchange(op)) {
      EXPECT_EQ(op.stream, compute_stream) << "without the overlap the exchanges block the compute stream";
    }
  }
}

// One combined layer pair in issue order (model_chunk_schedule_plan.py TransformerLayerSchedulePlan.run): the
// backward's combine, the forward's pre-dispatch computation, the backward's experts, the forward's dispatch, the
// backward's dispatch, the forward's experts, the forward's combine, the backward's pre-dispatch computation.
TEST(CombinedStep, LayerPairInTheOrderMegatronCoreIssuesIt)
{
  const traces::RankProgram p = program(ep_plan(), true);
  // The first combined step: backward of micro-batch 0 (layer 1 first), forward of micro-batch 1 (layer 0 first).
  std::vector<std::string> order;
  for (const traces::Op& op : p.ops) {
    const bool forward_layer0 = op.micro_batch == 1 && op.phase == traces::Phase::Forward && op.layer == 0;
    const bool backward_layer1 = op.micro_batch == 0 && op.phase == traces::Phase::Backward && op.layer == 1;
    if (!forward_layer0 && !backward_layer1)
      continue;
    if (is_exchange(op) || op.name == "attn.flash.fwd" || op.name == "expert.fc1.fwd" ||
        op.name == "expert.fc1.dgrad" || op.name == "attn.flash.bwd")
      order.push_back(op.name);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"moe.combine.bwd", "attn.flash.fwd", "expert.fc1.dgrad", "moe.dispatch",
                                             "moe.dispatch.bwd", "expert.fc1.fwd", "moe.combine", "attn.flash.bwd"}));
}

// --delay-wgrad-compute: the backward's dispatch waits for the experts' last data gradient (fc1's), not for the
// weight gradient that follows it, which then overlaps the exchange.
TEST(CombinedStep, DelayedWeightGradientsLetTheDispatchBackwardGoEarlier)
{
  auto producer_of_dispatch_backward = [](bool delay) {
    WorkloadOptions options;
    options.moe_a2a_overlap = true;
    options.delay_wgrad_compute = delay;
    const traces::RankProgram p = stage_program(make_workload(two_moe_layers(), ep_plan(), options), 0);
    for (const traces::Op& op : p.ops)
      if (op.name == "moe.dispatch.bwd" && op.stream == ep_stream)
        return p.ops[static_cast<size_t>(op.deps.back())].name.str();
    return std::string("none");
  };
  EXPECT_EQ(producer_of_dispatch_backward(false), "expert.fc1.wgrad");
  EXPECT_EQ(producer_of_dispatch_backward(true), "expert.fc1.dgrad");
}

TEST(CombinedStep, InterleavedScheduleWarmsUpOneForwardMore)
{
  const ParallelPlan plan = ep_plan(2, Schedule::Interleaved, 2);
  WorkloadOptions on;
  on.moe_a2a_overlap = true;
  const PipelineShape plain = workload_pipeline_shape(plan, {}), overlapped = workload_pipeline_shape(plan, on);
  EXPECT_EQ(overlapped.extra_warmup, 1);
  EXPECT_EQ(warmup_steps(overlapped, 0), warmup_steps(plain, 0) + 1);
  EXPECT_EQ(workload_pipeline_shape(ep_plan(), on).extra_warmup, 0); // no pipeline: its own combined schedule
  for (int64_t stage = 0; stage < 2; ++stage) {
    const traces::RankProgram p = program(plan, true, stage);
    expect_well_formed(p);
    EXPECT_TRUE(std::any_of(p.ops.begin(), p.ops.end(), [](const traces::Op& op) { return op.stream == ep_stream; }));
  }
}

TEST(CombinedStep, PlansMegatronCoreRefuses)
{
  auto refused = [](ParallelPlan plan, const std::string& why) {
    try {
      validate_moe_a2a_overlap(plan);
      ADD_FAILURE() << "accepted: " << why;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("--overlap-moe-expert-parallel-comm: ", 0), 0u) << e.what();
    }
  };
  ParallelPlan p = ep_plan();
  EXPECT_NO_THROW(validate_moe_a2a_overlap(p));
  p.ep = 1;
  refused(p, "--ep > 1");
  p = ep_plan();
  p.dispatcher = MoeDispatcher::AllGather;
  refused(p, "alltoall or deepep");
  refused(ep_plan(2), "--schedule interleaved");
  p = ep_plan();
  p.recompute = Recompute::Full;
  refused(p, "--recompute full");
  p = ep_plan();
  p.zero_stage = 3;
  refused(p, "--zero 0 or 1");
}

TEST(CombinedStep, RefusesStepsThatAreNotAForwardAndABackward)
{
  std::vector<traces::Op> ops(2);
  ops[1].id = 1;
  EXPECT_THROW(combine_steps(ops, {0, 1, true, 0, 1}, {1, 2, true, 0, 1}), std::invalid_argument);
  EXPECT_THROW(combine_steps(ops, {0, 1, true, 0, 1}, {0, 2, false, 0, 1}), std::invalid_argument);
}

} // namespace
} // namespace gputwin
