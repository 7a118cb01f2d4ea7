// sim::Scenario: the rules between a plan and a cluster, the cluster sized to the plan, the report's figures from
// hand-made results, its JSON round trip, and one scenario run on either executor.
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/flops.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/sim/iteration_estimate.hpp"
#include "gputwin/sim/iteration_executor.hpp"
#include "gputwin/sim/scenario.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace gputwin::sim {
namespace {

Scenario paper_scenario(const std::string& model_name, const std::string& cluster)
{
  const CatalogEntry* entry = find_catalog_model(model_name);
  Scenario s;
  s.model = entry->model;
  s.plan = entry->paper_plan;
  s.plan.tp_comm = TpComm::SequenceParallel;
  s.plan.recompute = Recompute::Selective;
  s.cluster.name_or_path = cluster;
  return s;
}

// The error message of `f`, or "" when it throws none.
template <typename F>
std::string input_error_of(F&& f)
{
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Scenario, SizesTheClusterToThePlanUnlessTheNodesAreGiven)
{
  Scenario s = paper_scenario("gpt3-175b", "dgx-a100"); // tp 8 x pp 8: 64 GPUs, 8 nodes of 8
  EXPECT_EQ(nodes_needed(s.plan, topo::load_cluster(s.cluster)), 8);
  EXPECT_EQ(size_cluster(s).nodes, 8);
  s.cluster.nodes = 12;
  EXPECT_EQ(size_cluster(s).nodes, 12);
  s.cluster.nodes = 4;
  const std::string error = input_error_of([&] { size_cluster(s); });
  EXPECT_NE(error.find("--nodes: the plan needs tp x pp x dp = 64 GPUs"), std::string::npos) << error;
  EXPECT_NE(error.find("expected --nodes 8 or more"), std::string::npos) << error;
}

TEST(Scenario, Fp8NeedsFp8TensorCores)
{
  Scenario s = paper_scenario("gpt-22b", "dgx-a100");
  s.plan.precision = GemmPrecision::Fp8;
  const std::string error = input_error_of([&] { validate(s, topo::load_cluster(s.cluster)); });
  EXPECT_EQ(error.rfind("--fp8: ", 0), 0U) << error;
  s.cluster.name_or_path = "dgx-h100";
  EXPECT_EQ(input_error_of([&] { validate(s, topo::load_cluster(s.cluster)); }), "");
}

TEST(Scenario, APlanThatDoesNotFitIsAnErrorUnlessAllowedThenAWarning)
{
  Scenario s = paper_scenario("gpt3-175b", "dgx-a100");
  s.plan.tp = 1; // 175B on 8 pipeline stages without tensor parallelism: far beyond 80 GiB
  s.plan.tp_comm = TpComm::AllReduce;
  const topo::ClusterSpec cluster = topo::load_cluster(s.cluster);
  const std::string error = input_error_of([&] { validate(s, cluster); });
  EXPECT_EQ(error.rfind("--allow-oom: not given, and the plan does not fit: pipeline stage ", 0), 0U) << error;
  s.allow_oom = true;
  const ScenarioCheck check = validate(s, cluster);
  EXPECT_GT(check.busiest.total_bytes, cluster.gpu.hbm_bytes);
  ASSERT_FALSE(check.warnings.empty());
  EXPECT_NE(check.warnings.front().find("simulated anyway (--allow-oom)"), std::string::npos);
}

TEST(Scenario, StragglersAreNotUnfoldedOverContextParallelism)
{
  Scenario s = paper_scenario("gpt-22b", "dgx-h100");
  s.plan.attention = AttentionKernel::Flash;
  s.plan.cp = 2;
  s.stragglers.gpus.push_back(SlowGpu{0, 0.5});
  const std::string error = input_error_of([&] { validate(s, topo::load_cluster(s.cluster)); });
  EXPECT_EQ(error.rfind("--slow-gpu: not with --cp", 0), 0U) << error;
}

// A hand-made result: 2 s per iteration, the first stage busy 1.5 s of a 1.8 s pipeline window with 0.1 s exposed.
IterationResult hand_made_result()
{
  IterationResult r;
  r.iteration_time_s = 2.0;
  StageTimes first;
  first.pipeline_start_s = 0.1;
  first.pipeline_end_s = 1.9;
  first.pipeline_compute_s = 1.5;
  first.pipeline_comm_s = 0.1;
  first.compute_s = 1.6;
  first.exposed_comm_s = 0.2;
  r.stages.push_back(first);
  r.executed_ops = 100;
  r.simulated_flows = 20;
  r.programs.resize(1);
  return r;
}

TEST(IterationReport, FiguresFromTheResultByHand)
{
  const Scenario s = paper_scenario("gpt-22b", "dgx-a100"); // tp 8, micro-batch 4, global batch 4, 8 GPUs
  const topo::ClusterSpec cluster = size_cluster(s);
  const IterationReport r = iteration_report(s.model, s.plan, cluster, hand_made_result());
  const double tokens = 4.0 * 2048;
  EXPECT_DOUBLE_EQ(r.tokens_per_s, tokens / 2.0);
  // Model FLOPs, the paper's formula: 72 B s L h^2 (1 + s/6h + V/12hL).
  const double h = 6144, L = 48, sl = 2048, V = 51200, B = 4;
  const double model_flops = 72 * B * sl * L * h * h * (1 + sl / (6 * h) + V / (12 * h * L));
  EXPECT_NEAR(r.model_flops, model_flops, 1e-9 * model_flops);
  EXPECT_NEAR(r.mfu, model_flops / 2.0 / (8 * cluster.gpu.peak_bf16_flops), 1e-12);
  EXPECT_EQ(r.mfu_precision, "bf16");
  EXPECT_DOUBLE_EQ(r.mfu, r.mfu_bf16);
  EXPECT_GT(r.hfu, r.mfu); // selective recompute executes more than the model's FLOPs
  EXPECT_NEAR(r.bubble_fraction, (1.8 - 1.5 - 0.1) / 1.5, 1e-12);
  EXPECT_DOUBLE_EQ(r.compute_s, 1.6);
  EXPECT_DOUBLE_EQ(r.exposed_comm_s, 0.2);
  EXPECT_EQ(r.simulated_events, 120);
  EXPECT_EQ(r.gpus, 8);
  EXPECT_EQ(r.nodes, 1);
}

TEST(IterationReport, Fp8MfuIsAgainstTheFp8PeakAndBf16MfuBeside)
{
  Scenario s = paper_scenario("gpt-22b", "dgx-h100");
  s.plan.precision = GemmPrecision::Fp8;
  const topo::ClusterSpec cluster = size_cluster(s);
  const IterationReport r = iteration_report(s.model, s.plan, cluster, hand_made_result());
  EXPECT_EQ(r.mfu_precision, "fp8");
  EXPECT_DOUBLE_EQ(r.mfu_peak_flops, cluster.gpu.peak_fp8_flops);
  EXPECT_NEAR(r.mfu * cluster.gpu.peak_fp8_flops, r.mfu_bf16 * cluster.gpu.peak_bf16_flops, 1e-6 * r.model_flops);
  EXPECT_LT(r.hfu, 1.0);
}

TEST(IterationReport, JsonRoundTripIsExact)
{
  const Scenario s = paper_scenario("gpt-22b", "dgx-a100");
  IterationReport r = iteration_report(s.model, s.plan, size_cluster(s), hand_made_result());
  r.iteration_time_s = 1.0 / 3.0; // not a short decimal
  std::ostringstream out;
  JsonWriter json(out, 0);
  write_iteration_report(json, r);
  const IterationReport back = read_iteration_report(traces::parse_json(out.str()));
  EXPECT_EQ(back.iteration_time_s, r.iteration_time_s);
  EXPECT_EQ(back.mfu, r.mfu);
  EXPECT_EQ(back.hfu, r.hfu);
  EXPECT_EQ(back.bubble_fraction, r.bubble_fraction);
  EXPECT_EQ(back.mfu_precision, r.mfu_precision);
  EXPECT_EQ(back.simulated_events, r.simulated_events);
  EXPECT_THROW(read_iteration_report(traces::parse_json("{\"mfu\": 1}")), std::runtime_error);
}

// One scenario on both executors: the same cluster and figures derived from each executor's own time; the
// estimate within a few percent of the flow-level simulation on this small plan.
TEST(Scenario, RunsOnEitherExecutor)
{
  Scenario s = paper_scenario("gpt-22b", "dgx-a100");
  s.plan.dp = 2;
  s.plan.global_batch = 16;
  const ScenarioRun estimated = run(s, EstimateExecutor());
  const ScenarioRun simulated = run(s, SimgridExecutor());
  EXPECT_EQ(estimated.cluster.nodes, 2);
  EXPECT_EQ(simulated.report.gpus, 16);
  EXPECT_DOUBLE_EQ(simulated.report.tokens_per_s, 16.0 * 2048 / simulated.report.iteration_time_s);
  EXPECT_NEAR(estimated.report.iteration_time_s, simulated.report.iteration_time_s,
              0.05 * simulated.report.iteration_time_s);
  EXPECT_STREQ(EstimateExecutor().name(), "estimate");
  EXPECT_STREQ(SimgridExecutor().name(), "simgrid");
}

} // namespace
} // namespace gputwin::sim
