// Whole iterations against the paper: Table 4 (one 22B layer, forward and backward; the baseline row's two
// figures were used to fit the A100 compute model, the other rows are checked) and Table 5 (end-to-end
// iteration times, checked, with the host of the CLI's default framework on dgx-a100: megatron-lm). Bounds:
// Table 4 10% per figure; Table 5 6% per row and a mean absolute error of at most 3% over the eight rows,
// asserted by the MeanAbsoluteError test over the figures recorded in table5_cases (see below).
// One SimGrid platform per test (ctest runs each test in its own process).
#include "data/korthikanti2022.hpp"

#include "gputwin/models/framework_profile.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/sim/iteration_executor.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace gputwin::sim {
namespace {

// One iteration on dgx-a100; `default_host`: issued by the host of the framework `gputwin simulate` defaults to
// on that cluster (framework_profile.hpp default_framework_for), else by none (ops start when the GPU can).
IterationResult run(const GptConfig& model, const ParallelPlan& plan, bool timeline, bool default_host = false)
{
  const topo::ClusterSpec cluster = topo::load_cluster("dgx-a100", static_cast<int>((plan.gpus() + 7) / 8), {});
  const topo::ClusterGraph graph(cluster);
  const GpuComputeModel gpu =
      builtin_compute_model(cluster.gpu.generation, cluster.gpu.kind, cluster.gpu.peak_bf16_flops, cluster.gpu.hbm_bytes_per_s);
  const Workload workload = make_workload(model, plan);
  IterationOptions options;
  options.record_timeline = timeline;
  return simulate_iteration(graph, workload, gpu, options,
                            builtin_framework_profile(default_host ? default_framework_for(cluster.gpu.generation)
                                                                   : "none"));
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

// Table 5 figures simulated with the Table 3 plans and the CLI's defaults (`gputwin simulate --model M --plan paper
// --no-sp --recompute full`, and `--sp --recompute selective`): the megatron-lm host, with its
// torch.cuda.synchronize() after each batch of pipeline p2p, and Megatron's scatter/gather of the full-recompute
// rows' pipeline messages (op_vocabulary.hpp pipeline_scatter_gather). The mean-absolute-error bound over all eight
// is checked in Table5.MeanAbsoluteError... from the same runs' results recorded below; each run here also asserts
// the value it records, so the two cannot drift apart.
struct Table5Case {
  const char* model;
  bool selective_sp;
  double simulated_s; // recorded result of this very run, asserted to 0.1%
};
constexpr Table5Case table5_cases[] = {
    // Errors against the paper: -0.15%, -4.55%, +1.77%, -1.19%, +0.75%, -2.91%, +3.82%, +2.79% (mean 2.24%).
    {"gpt-22b", false, 1.4178},  {"gpt-22b", true, 1.0499},      {"gpt3-175b", false, 18.451},
    {"gpt3-175b", true, 13.586}, {"mt-nlg-530b", false, 49.419}, {"mt-nlg-530b", true, 36.729},
    {"gpt-1t", false, 98.023},   {"gpt-1t", true, 73.484},
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
          paper_plan(c.model, c.selective_sp, c.selective_sp ? Recompute::Selective : Recompute::Full), false, true);
  EXPECT_NEAR(r.iteration_time_s, published(c), 0.06 * published(c));
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

TEST(Table5, MeanAbsoluteErrorAtMostThreePercentAndGainSign)
{
  double sum = 0;
  for (const Table5Case& c : table5_cases)
    sum += std::abs(c.simulated_s - published(c)) / published(c);
  EXPECT_LE(sum / 8, 0.03);
  // Selective + SP beats full recompute for every model, as in the paper.
  for (size_t i = 0; i < 8; i += 2)
    EXPECT_LT(table5_cases[i + 1].simulated_s, table5_cases[i].simulated_s) << table5_cases[i].model;
}

} // namespace
} // namespace gputwin::sim
