// One layer against the paper: Table 4 of Korthikanti et al. 2022 (one 22B layer, forward and backward; the
// baseline row's two figures were used to fit the A100 compute model, the other rows are checked), 10% per
// figure. Table 5 (end-to-end iteration times) is checked through the binary: tests/cli/table5_validation_test.cpp.
// One SimGrid platform per test (ctest runs each test in its own process).
#include "data/korthikanti2022.hpp"

#include "gputwin/models/framework_profile.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/sim/iteration_executor.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace gputwin::sim {
namespace {

// One iteration on dgx-a100, issued by no host (ops start when the GPU can).
IterationResult run(const GptConfig& model, const ParallelPlan& plan, bool timeline)
{
  const topo::ClusterSpec cluster = topo::load_cluster("dgx-a100", static_cast<int>((plan.gpus() + 7) / 8), {});
  const topo::ClusterGraph graph(cluster);
  const GpuComputeModel gpu =
      builtin_compute_model(cluster.gpu.generation, cluster.gpu.kind, cluster.gpu.peak_bf16_flops, cluster.gpu.hbm_bytes_per_s);
  const Workload workload = make_workload(model, plan);
  IterationOptions options;
  options.record_timeline = timeline;
  return simulate_iteration(graph, workload, gpu, options, builtin_framework_profile("none"));
}

ParallelPlan paper_plan(const char* name, bool sp, Recompute recompute)
{
  ParallelPlan plan = find_catalog_model(name)->paper_plan;
  plan.tp_comm = sp ? TpComm::SequenceParallel : TpComm::AllReduce;
  plan.recompute = recompute;
  return plan;
}

void check_table4_row(size_t row_index)
{
  const reference::Table4Row& row = reference::table4[row_index];
  SCOPED_TRACE(row.experiment);
  GptConfig model = find_catalog_model("gpt-22b")->model;
  model.layers = 4; // a layer's time does not depend on how many follow; layer 1 is measured
  const ParallelPlan plan = paper_plan("gpt-22b", row.sequence_parallel, *parse_recompute(row.recompute));
  const IterationResult r = run(model, plan, true);
  double fwd_begin = 1e30, fwd_end = 0, bwd_begin = 1e30, bwd_end = 0;
  for (const OpSlice& slice : r.timeline) {
    const traces::Op& op = r.programs[static_cast<size_t>(slice.program)].ops[static_cast<size_t>(slice.op)];
    if (op.layer != 1)
      continue;
    const bool forward = op.phase == traces::Phase::Forward;
    (forward ? fwd_begin : bwd_begin) = std::min(forward ? fwd_begin : bwd_begin, slice.start_s);
    (forward ? fwd_end : bwd_end) = std::max(forward ? fwd_end : bwd_end, slice.end_s);
  }
  EXPECT_NEAR((fwd_end - fwd_begin) * 1e3, row.forward_ms, 0.10 * row.forward_ms);
  EXPECT_NEAR((bwd_end - bwd_begin) * 1e3, row.backward_ms, 0.10 * row.backward_ms);
}

TEST(Table4, Baseline)
{
  check_table4_row(0);
}
TEST(Table4, SequenceParallel)
{
  check_table4_row(1);
}
TEST(Table4, FullRecompute)
{
  check_table4_row(2);
}
TEST(Table4, SelectiveRecompute)
{
  check_table4_row(3);
}
TEST(Table4, SelectiveAndSequenceParallel)
{
  check_table4_row(4);
}

} // namespace
} // namespace gputwin::sim
