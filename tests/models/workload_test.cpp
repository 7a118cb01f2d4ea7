// The generated workload: FLOPs against the paper's counts, Megatron's collectives per layer, THE schedule's
// order, and matched pipeline messages. Plain C++.
#include "gputwin/models/flops.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/pipeline_schedule.hpp"
#include "gputwin/models/workload.hpp"

#include <gtest/gtest.h>

#include <map>
#include <tuple>

namespace gputwin {
namespace {

GptConfig small_model()
{
  return GptConfig{"small", 1024, 16, 8, 512, 51200};
}

ParallelPlan plan_of(int64_t tp, int64_t pp, int64_t dp, int64_t global_batch, bool sp, Recompute r,
                     Schedule schedule = Schedule::OneFOneB, int64_t chunks = 1)
{
  ParallelPlan p;
  p.tp = tp;
  p.pp = pp;
  p.dp = dp;
  p.global_batch = global_batch;
  p.tp_comm = sp ? TpComm::SequenceParallel : TpComm::AllReduce;
  p.recompute = r;
  p.schedule = schedule;
  p.chunks = chunks;
  return p;
}

double gemm_flops(const traces::OpGraph& g)
{
  double flops = 0;
  for (const auto& program : g.ranks)
    for (const auto& op : program.ops)
      if (op.gemm.m > 0)
        flops += op.flops;
  return flops;
}

TEST(Workload, GemmFlopsAddUpToThePapersCounts)
{
  const GptConfig m = small_model();
  for (const Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full}) {
    const ParallelPlan plan = plan_of(4, 2, 2, 8, true, r);
    validate_plan(m, plan);
    // Folded: one program per stage stands for tp x dp ranks, each doing 1/t of the stage's work for 1/d of
    // the batch.
    const double total = gemm_flops(workload_graph(make_workload(m, plan))) * 4 * 2;
    const double model = model_flops_per_iteration(m, 8);
    const double B = 8, L = 8, s = 512, h = 1024;
    double expected = model;
    if (r == Recompute::Selective)
      expected += L * 4 * B * s * s * h; // the attention core's forward, once more
    if (r == Recompute::Full)
      expected += L * layer_forward_flops(m, 8);
    EXPECT_NEAR(total / expected, 1.0, 1e-12) << to_string(r);
  }
}

std::map<std::string, int> collectives_of_layer(const ParallelPlan& plan, traces::Phase phase)
{
  const traces::RankProgram program = stage_program(make_workload(small_model(), plan), 0);
  std::map<std::string, int> count;
  for (const auto& op : program.ops)
    if (op.kind == traces::OpKind::Collective && op.layer == 3 && op.micro_batch == 0 && op.phase == phase)
      ++count[op.name];
  return count;
}

TEST(Workload, TensorParallelCollectivesWhereMegatronPutsThem)
{
  const ParallelPlan tp = plan_of(4, 1, 1, 1, false, Recompute::None);
  EXPECT_EQ(collectives_of_layer(tp, traces::Phase::Forward), (std::map<std::string, int>{{"tp.all_reduce", 2}}));
  EXPECT_EQ(collectives_of_layer(tp, traces::Phase::Backward), (std::map<std::string, int>{{"tp.all_reduce", 2}}));
  const ParallelPlan sp = plan_of(4, 1, 1, 1, true, Recompute::None);
  EXPECT_EQ(collectives_of_layer(sp, traces::Phase::Forward),
            (std::map<std::string, int>{{"tp.all_gather", 2}, {"tp.reduce_scatter", 2}}));
  // Backward: g-bar's all-gather of the gradient and the re-gather of the saved shard for each block, and
  // g's reduce-scatter.
  EXPECT_EQ(collectives_of_layer(sp, traces::Phase::Backward),
            (std::map<std::string, int>{{"tp.all_gather", 4}, {"tp.reduce_scatter", 2}}));
  // Full recompute reruns the forward, collectives included.
  const ParallelPlan full = plan_of(4, 1, 1, 1, false, Recompute::Full);
  EXPECT_EQ(collectives_of_layer(full, traces::Phase::Recompute), (std::map<std::string, int>{{"tp.all_reduce", 2}}));
  const ParallelPlan one = plan_of(1, 1, 1, 1, true, Recompute::None);
  EXPECT_TRUE(collectives_of_layer(one, traces::Phase::Forward).empty());
}

TEST(Workload, StageProgramsRunTheScheduleModulesOrder)
{
  for (const auto& [schedule, chunks] :
       {std::pair{Schedule::OneFOneB, 1}, std::pair{Schedule::GPipe, 1}, std::pair{Schedule::Interleaved, 2}}) {
    const ParallelPlan plan = plan_of(2, 4, 1, 8, true, Recompute::Full, schedule, chunks);
    const Workload w = make_workload(small_model(), plan);
    for (int64_t stage = 0; stage < 4; ++stage) {
      // The (phase, micro-batch, chunk) of the compute ops, consecutive repeats merged, recompute as backward.
      std::vector<PipelineStep> order;
      for (const auto& op : stage_program(w, stage).ops) {
        if (op.kind != traces::OpKind::Compute || op.micro_batch < 0)
          continue;
        const PipelineStep step{op.phase == traces::Phase::Forward ? PipelinePhase::Forward : PipelinePhase::Backward,
                                op.micro_batch, op.chunk};
        if (order.empty() || !(order.back() == step))
          order.push_back(step);
      }
      EXPECT_EQ(order, stage_schedule(pipeline_shape(plan), stage)) << to_string(schedule) << " stage " << stage;
    }
  }
}

TEST(Workload, EveryPipelineSendHasItsReceive)
{
  const ParallelPlan plan = plan_of(2, 4, 2, 16, false, Recompute::Selective, Schedule::Interleaved, 2);
  const traces::OpGraph g = workload_graph(make_workload(small_model(), plan));
  std::map<std::tuple<int32_t, int32_t, int64_t>, double> sent, received;
  for (const auto& program : g.ranks)
    for (const auto& op : program.ops) {
      if (op.kind == traces::OpKind::Send)
        sent[{program.rank, op.peer, op.sequence}] = op.bytes;
      if (op.kind == traces::OpKind::Recv)
        received[{op.peer, program.rank, op.sequence}] = op.bytes;
    }
  EXPECT_EQ(sent.size(), 2u * 8u * 2u * 4u - 2u * 8u); // every (micro-batch, chunk) crosses 7 of 8 boundaries, twice
  EXPECT_EQ(sent, received);
}

TEST(Workload, DataParallelReduction)
{
  auto names = [](const ParallelPlan& plan, bool overlap) {
    std::map<std::string, int> count;
    for (const auto& op : stage_program(make_workload(small_model(), plan, {overlap}), 1).ops)
      if (op.kind == traces::OpKind::Collective && op.name.rfind("dp.", 0) == 0)
        ++count[op.name];
    return count;
  };
  ParallelPlan plan = plan_of(2, 2, 4, 16, true, Recompute::None);
  EXPECT_EQ(names(plan, false), (std::map<std::string, int>{{"dp.all_reduce", 1}}));
  EXPECT_EQ(names(plan, true), (std::map<std::string, int>{{"dp.all_reduce", 4}})); // one bucket per layer
  plan.zero_stage = 1;
  EXPECT_EQ(names(plan, false), (std::map<std::string, int>{{"dp.all_gather", 1}, {"dp.reduce_scatter", 1}}));
}

} // namespace
} // namespace gputwin
