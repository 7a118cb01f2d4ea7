// Whole iterations against the paper: Table 4 (one 22B layer, forward and backward; the baseline row's two
// figures were used to fit the A100 compute model, the other rows are checked) and Table 5 (end-to-end
// iteration times, checked). Bounds: 10% per figure; Table 5 also a mean absolute error of at most 5%,
// asserted by the MeanAbsoluteError test over the figures recorded in table5_results.txt (see below).
// One SimGrid platform per test (ctest runs each test in its own process).
#include "data/korthikanti2022.hpp"

#include "gputwin/models/model_catalog.hpp"
#include "gputwin/sim/iteration_executor.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace gputwin::sim {
namespace {

IterationResult run(const GptConfig& model, const ParallelPlan& plan, bool timeline)
{
  const topo::ClusterSpec cluster = topo::load_cluster("dgx-a100", static_cast<int>((plan.gpus() + 7) / 8), {});
  const topo::ClusterGraph graph(cluster);
  const GpuComputeModel gpu =
      builtin_compute_model(cluster.gpu.generation, cluster.gpu.kind, cluster.gpu.peak_bf16_flops, cluster.gpu.hbm_bytes_per_s);
  const Workload workload = make_workload(model, plan);
  IterationOptions options;
  options.record_timeline = timeline;
  return simulate_iteration(graph, workload, gpu, options);
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

// Table 5 figures simulated with the Table 3 plans. The mean-absolute-error bound over all eight is checked
// in Table5.MeanAbsoluteErrorOfTheRecordedRuns from the same runs' results recorded below; each run here
// also asserts the value it records, so the two cannot drift apart.
struct Table5Case {
  const char* model;
  bool selective_sp;
  double simulated_s; // recorded result of this very run, asserted to 0.1%
};
constexpr Table5Case table5_cases[] = {
    // With compute-communication interference (the A100 model's default; sim/README.md): mean absolute error
    // 2.42%. Before the cluster took Echo's fitted NCCL latencies (stale defaults: Simple base 60 us, no channel
    // cost): 1.4177, 1.0559, 18.483, 13.632, 49.744, 36.511, 98.087, 73.364 (2.30%).
    {"gpt-22b", false, 1.4124},  {"gpt-22b", true, 1.0495},      {"gpt3-175b", false, 18.392},
    {"gpt3-175b", true, 13.524}, {"mt-nlg-530b", false, 49.622}, {"mt-nlg-530b", true, 36.363},
    {"gpt-1t", false, 97.939},   {"gpt-1t", true, 73.179},
};

double published(const Table5Case& c)
{
  for (const auto& row : reference::table5)
    if (std::string(row.name) == c.model)
      return c.selective_sp ? row.selective_sp_seconds : row.full_recompute_seconds;
  return 0;
}

void check_table5(size_t index)
{
  const Table5Case& c = table5_cases[index];
  SCOPED_TRACE(std::string(c.model) + (c.selective_sp ? " selective + SP" : " full recompute"));
  const IterationResult r =
      run(find_catalog_model(c.model)->model,
          paper_plan(c.model, c.selective_sp, c.selective_sp ? Recompute::Selective : Recompute::Full), false);
  EXPECT_NEAR(r.iteration_time_s, published(c), 0.10 * published(c));
  EXPECT_NEAR(r.iteration_time_s, c.simulated_s, 1e-3 * c.simulated_s) << "update table5_cases";
}

TEST(Table5, Gpt22bFullRecompute)
{
  check_table5(0);
}
TEST(Table5, Gpt22bSelectiveSp)
{
  check_table5(1);
}
TEST(Table5, Gpt175bFullRecompute)
{
  check_table5(2);
}
TEST(Table5, Gpt175bSelectiveSp)
{
  check_table5(3);
}
TEST(Table5, Mtnlg530bFullRecompute)
{
  check_table5(4);
}
TEST(Table5, Mtnlg530bSelectiveSp)
{
  check_table5(5);
}
TEST(Table5, Gpt1tFullRecompute)
{
  check_table5(6);
}
TEST(Table5, Gpt1tSelectiveSp)
{
  check_table5(7);
}

TEST(Table5, MeanAbsoluteErrorAtMostFivePercentAndGainSign)
{
  double sum = 0;
  for (const Table5Case& c : table5_cases)
    sum += std::abs(c.simulated_s - published(c)) / published(c);
  EXPECT_LE(sum / 8, 0.05);
  // Selective + SP beats full recompute for every model, as in the paper.
  for (size_t i = 0; i < 8; i += 2)
    EXPECT_LT(table5_cases[i + 1].simulated_s, table5_cases[i].simulated_s) << table5_cases[i].model;
}

} // namespace
} // namespace gputwin::sim
