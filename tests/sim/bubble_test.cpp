// Pipeline bubbles on a communication-free cluster against the closed forms: (p - 1)/m for GPipe and 1F1B,
// (p - 1)/(v m) for interleaved 1F1B (Narayanan et al. 2021). One SimGrid platform per test.
#include "gputwin/sim/iteration_executor.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

namespace gputwin::sim {
namespace {

double bubble(Schedule schedule, int64_t chunks, int64_t micro_batches)
{
  // A small vocabulary keeps the embedding and output layer, which only the end stages run, negligible.
  const GptConfig model{"bubble-test", 4096, 32, 8, 2048, 128};
  ParallelPlan plan;
  plan.pp = 4;
  plan.global_batch = micro_batches;
  plan.schedule = schedule;
  plan.chunks = chunks;
  validate_plan(model, plan);
  const topo::ClusterGraph graph(topo::load_cluster("dgx-a100", 1, {}));
  const GpuComputeModel gpu = builtin_compute_model(GpuGeneration::Ampere, "a100-sxm4-80gb", 312e12, 2039e9);
  IterationOptions options;
  options.zero_communication = true;
  const IterationResult r = simulate_iteration(graph, make_workload(model, plan), gpu, options);
  const StageTimes& s = r.stages.front();
  EXPECT_EQ(s.pipeline_comm_s, 0.0);
  return (s.pipeline_end_s - s.pipeline_start_s - s.pipeline_compute_s) / s.pipeline_compute_s;
}

TEST(Bubble, OneFOneB)
{
  EXPECT_NEAR(bubble(Schedule::OneFOneB, 1, 8), 3.0 / 8, 0.01);
}
TEST(Bubble, GPipe)
{
  EXPECT_NEAR(bubble(Schedule::GPipe, 1, 8), 3.0 / 8, 0.01);
}
TEST(Bubble, Interleaved)
{
  EXPECT_NEAR(bubble(Schedule::Interleaved, 2, 8), 3.0 / 16, 0.01);
}

} // namespace
} // namespace gputwin::sim
