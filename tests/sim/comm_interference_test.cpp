// Compute-communication interference (models/comm_interference.hpp, sim/interference.hpp): the slowdown of one
// kernel under a load (SMs with wave quantization, HBM share), the model file's section, and both executors on
// hand-computed schedules -- a GEMM overlapped by a collective for part of its run progresses at the loaded rate
// only then -- and on a generated workload, where the DAG executor's fixed point must equal the SimGrid executor's
// events. SimGrid tests build one platform each: ctest runs every test in its own process.
#include "data/korthikanti2022.hpp"

#include "gputwin/config/gpu_model_yaml.hpp"
#include "gputwin/models/calibration.hpp"
#include "gputwin/models/comm_interference.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/sim/dag_executor.hpp"
#include "gputwin/sim/interference.hpp"
#include "gputwin/sim/isolated_run.hpp"
#include "gputwin/sim/iteration_estimate.hpp"
#include "gputwin/sim/iteration_executor.hpp"
#include "gputwin/sim/program_executor.hpp"
#include "gputwin/topologies/cluster_spec.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gputwin::sim {
namespace {

using traces::Op;
using traces::OpKind;

GpuComputeModel a100()
{
  return builtin_compute_model(GpuGeneration::Ampere, "a100-sxm4-80gb", 312e12, 2.039e12);
}

GpuComputeModel h100()
{
  return builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", 989e12, 3.35e12);
}

Op gemm(int64_t id, int64_t m, int64_t n, int64_t k, int32_t stream = 0)
{
  Op op;
  op.id = id;
  op.kind = OpKind::Compute;
  op.name = "gemm";
  op.stream = stream;
  op.gemm = {m, n, k, 1};
  const double dm = static_cast<double>(m), dn = static_cast<double>(n), dk = static_cast<double>(k);
  op.flops = 2 * dm * dn * dk;
  op.bytes = 2 * (dm * dk + dk * dn + dm * dn);
  op.micro_batch = 0;
  return op;
}

Op memory_kernel(int64_t id, double bytes, int32_t stream = 0)
{
  Op op;
  op.id = id;
  op.kind = OpKind::Compute;
  op.name = "dropout";
  op.stream = stream;
  op.bytes = bytes;
  op.micro_batch = 0;
  return op;
}

TEST(CommInterference, NoLoadIsTheComputeModelExactly)
{
  const GpuComputeModel gpu = a100();
  const Op op = gemm(0, 4096, 4096, 4096);
  EXPECT_EQ(interfered_duration_s(gpu, op, CommLoad{}), compute_duration_s(gpu, op));
  EXPECT_EQ(interference_rate(gpu, op, CommLoad{}), 1.0);
  EXPECT_TRUE(gpu.comm_interference.enabled);
  EXPECT_FALSE(nominal_roofline_model("cpu", 1e11, 1e10, "").comm_interference.enabled);
}

// One wave of tiles that no longer fits beside NCCL's CTAs becomes two: the GEMM's math takes twice as long
// (the H100 case of the NVIDIA forum report: 24 all-gather CTAs, a 132-tile GEMM, nearly 2x).
TEST(CommInterference, ChannelsTakeSmsAndAFullWaveSpillsIntoASecond)
{
  for (const GpuComputeModel& gpu : {a100(), h100()}) {
    SCOPED_TRACE(gpu.gpu_kind);
    const int64_t tiles_n = gpu.multiprocessors == 108 ? 9 : 11; // 12 x tiles_n tiles = one full wave
    const Op op = gemm(0, 128 * 12, 128 * tiles_n, 8192);
    ASSERT_EQ(gemm_wave_utilization(gpu, op.gemm, gpu.multiprocessors), 1.0);
    const double alone_s = compute_duration_s(gpu, op) - gpu.kernel_overhead_s;
    const double loaded_s = interfered_duration_s(gpu, op, CommLoad{24, 0}) - gpu.kernel_overhead_s;
    EXPECT_NEAR(loaded_s / alone_s, 2.0, 1e-12);
    // Many waves: the SMs' share alone, (S / (S - 24)) up to the last wave's rounding.
    const Op big = gemm(1, 16384, 16384, 8192);
    const double ratio = (interfered_duration_s(gpu, big, CommLoad{24, 0}) - gpu.kernel_overhead_s) /
                         (compute_duration_s(gpu, big) - gpu.kernel_overhead_s);
    const double sms = gpu.multiprocessors;
    EXPECT_NEAR(ratio, sms / (sms - 24), 0.03 * ratio);
    EXPECT_GT(ratio, 1.0);
  }
}

TEST(CommInterference, MemoryBoundKernelsShareHbm)
{
  const GpuComputeModel gpu = a100();
  const Op op = memory_kernel(0, 1e9);
  const double bytes_s = compute_duration_s(gpu, op) - gpu.kernel_overhead_s;
  // A quarter of the HBM's peak to communication: the kernel keeps three quarters of its bandwidth; SMs do not
  // matter to it.
  const double loaded_s = interfered_duration_s(gpu, op, CommLoad{24, 0.25 * gpu.hbm_bytes_per_s});
  EXPECT_NEAR(loaded_s - gpu.kernel_overhead_s, bytes_s / 0.75, 1e-15);
  EXPECT_EQ(interfered_duration_s(gpu, op, CommLoad{24, 0}), compute_duration_s(gpu, op));
  // Never below min_hbm_share.
  EXPECT_NEAR(interfered_duration_s(gpu, op, CommLoad{0, 5 * gpu.hbm_bytes_per_s}) - gpu.kernel_overhead_s,
              bytes_s / min_hbm_share, 1e-12);
}

TEST(CommInterference, ModelFileSectionRoundTripsAndCanBeAbsent)
{
  Calibration c;
  c.gpu = a100();
  std::ostringstream text;
  config::write_calibration_yaml(text, c, {});
  ASSERT_NE(text.str().find("comm_interference:"), std::string::npos);
  const std::string path = test_temp_path("model.yaml");
  std::ofstream(path) << text.str();
  const GpuComputeModel read = config::load_gpu_model_yaml(path);
  EXPECT_TRUE(read.comm_interference.enabled);
  EXPECT_EQ(read.comm_interference.sms_per_channel, c.gpu.comm_interference.sms_per_channel);
  EXPECT_EQ(read.comm_interference.p2p_channels, c.gpu.comm_interference.p2p_channels);
  EXPECT_EQ(read.comm_interference.hbm_bytes_per_comm_byte, c.gpu.comm_interference.hbm_bytes_per_comm_byte);
  EXPECT_EQ(read.comm_interference.source, c.gpu.comm_interference.source);
  c.gpu.comm_interference.enabled = false;
  std::ostringstream without;
  config::write_calibration_yaml(without, c, {});
  EXPECT_EQ(without.str().find("comm_interference:"), std::string::npos);
  std::ofstream(path) << without.str();
  EXPECT_FALSE(config::load_gpu_model_yaml(path).comm_interference.enabled);
  std::remove(path.c_str());
}

TEST(CommInterference, ProgressAdvancesAtTheRateOfEachInterval)
{
  const GpuComputeModel gpu = a100();
  const Op op = gemm(0, 8192, 8192, 8192);
  const double work_s = compute_duration_s(gpu, op);
  const CommLoad load{24, 0};
  const double r = interference_rate(gpu, op, load);
  ASSERT_LT(r, 1.0);
  // Loaded from 1 ms to 2 ms of a run that starts at 0.5 ms.
  const LoadTimeline timeline({{1e-3, 2e-3, load}});
  EXPECT_NEAR(timeline.end_s(gpu, op, 0.5e-3, work_s), 0.5e-3 + work_s + 1e-3 * (1 - r), 1e-15);
  // Started inside the interval.
  EXPECT_NEAR(timeline.end_s(gpu, op, 1.5e-3, work_s), 1.5e-3 + work_s + 0.5e-3 * (1 - r), 1e-15);
  // After it: alone.
  EXPECT_EQ(timeline.end_s(gpu, op, 2e-3, work_s), 2e-3 + work_s);
}

// A collective of rank 0's TP group (one flow to GPU 1 on NVLink, the only simulated member) on a stream of its
// own, after a short memory-bound kernel, while a long GEMM runs on the compute stream.
class OneFlow : public CommSource {
public:
  explicit OneFlow(double bytes)
  {
    work_.flows = {Flow{0, 1, bytes, 1}};
    work_.channels = 24;
  }
  const CommWork& collective(const Op&) override { return work_; }
  const CommWork& message(int32_t, const Op&) override { return work_; }
  bool may_run_alone(const Op&) const override { return false; }
  const CommWork& work() const { return work_; }

private:
  CommWork work_;
};

struct OverlapCase {
  topo::ClusterSpec cluster = topo::load_cluster("dgx-a100", 1, {});
  topo::ClusterGraph graph{cluster};
  GpuComputeModel gpu =
      builtin_compute_model(cluster.gpu.generation, cluster.gpu.kind, cluster.gpu.peak_bf16_flops, cluster.gpu.hbm_bytes_per_s);
  OneFlow comm{2e8};
  std::vector<traces::RankProgram> programs;
  std::vector<traces::CommGroup> groups{{"tp", {0, 1}}};
  ComputeDuration compute_s = [this](size_t, const Op& op) { return compute_duration_s(gpu, op); };
  OverlapCase()
  {
    traces::RankProgram p;
    p.rank = 0;
    p.ops.push_back(gemm(0, 8192, 8192, 8192, 0));
    p.ops.push_back(memory_kernel(1, 1e8, 1));
    Op all_reduce;
    all_reduce.id = 2;
    all_reduce.kind = OpKind::Collective;
    all_reduce.name = "all_reduce";
    all_reduce.stream = 1;
    all_reduce.group = 0;
    all_reduce.sequence = 0;
    all_reduce.bytes = 2e8;
    all_reduce.micro_batch = 0;
    p.ops.push_back(all_reduce);
    programs.push_back(p);
  }
  // The GEMM alone until the collective starts, at the loaded rate while it runs, alone again after.
  double expected_gemm_end_s() const
  {
    const double kernel_s = compute_duration_s(gpu, programs[0].ops[1]);
    const double comm_s = contention_free_duration_s(graph, comm.work());
    const CommLoad load = comm_op_load(graph, gpu, comm.work(), programs[0].ops[2], 0);
    const double r = interference_rate(gpu, programs[0].ops[0], load);
    const double work_s = compute_duration_s(gpu, programs[0].ops[0]);
    return kernel_s + comm_s + (work_s - kernel_s - comm_s * r);
  }
};

TEST(CommInterference, DagExecutorSlowsTheGemmOnlyWhileTheCollectiveRuns)
{
  OverlapCase c;
  IterationOptions options;
  options.interference = &c.gpu;
  const IterationResult on = execute_dag(c.graph, c.programs, c.groups, c.comm, c.compute_s, {}, options);
  const IterationResult off = execute_dag(c.graph, c.programs, c.groups, c.comm, c.compute_s, {}, {});
  EXPECT_EQ(off.iteration_time_s, compute_duration_s(c.gpu, c.programs[0].ops[0]));
  EXPECT_NEAR(on.iteration_time_s, c.expected_gemm_end_s(), 1e-15);
  EXPECT_GT(on.iteration_time_s, off.iteration_time_s * 1.01);
}

TEST(CommInterference, SimgridExecutorSlowsTheGemmOnlyWhileTheCollectiveRuns)
{
  OverlapCase c;
  IterationOptions options;
  options.interference = &c.gpu;
  const IterationResult on = execute_programs(c.graph, c.programs, c.groups, c.comm, c.compute_s, options);
  EXPECT_NEAR(on.iteration_time_s, c.expected_gemm_end_s(), 1e-12);
}

// A generated workload with pipeline messages, TP collectives overlapping GEMMs and DP reductions overlapping the
// backward: the DAG executor's fixed point equals the SimGrid executor's events.
IterationResult workload_run(bool simgrid, bool interference, const IterationOptions& options = {}, int64_t tp = 4)
{
  GptConfig model = find_catalog_model("gpt-22b")->model;
  model.layers = 8;
  ParallelPlan plan;
  plan.tp = tp;
  plan.pp = 2;
  plan.dp = 2;
  plan.micro_batch = 1;
  plan.global_batch = 8;
  plan.tp_comm = TpComm::SequenceParallel;
  plan.recompute = Recompute::Selective;
  plan.zero_stage = 1;
  const topo::ClusterSpec cluster = topo::load_cluster("dgx-a100", static_cast<int>(tp * 4 / 8), {});
  const topo::ClusterGraph graph(cluster);
  GpuComputeModel gpu =
      builtin_compute_model(cluster.gpu.generation, cluster.gpu.kind, cluster.gpu.peak_bf16_flops, cluster.gpu.hbm_bytes_per_s);
  gpu.comm_interference.enabled = interference;
  WorkloadOptions workload_options;
  workload_options.overlap_grad_reduce = true;
  const Workload workload = make_workload(model, plan, workload_options);
  const FrameworkProfile framework = builtin_framework_profile("megatron-lm");
  return simgrid ? simulate_iteration(graph, workload, gpu, options, framework)
                 : estimate_iteration(graph, workload, gpu, framework, options);
}

TEST(CommInterference, BothExecutorsAgreeOnAGeneratedWorkload)
{
  const double dag_on = workload_run(false, true).iteration_time_s;
  const double dag_off = workload_run(false, false).iteration_time_s;
  const double simgrid_on = workload_run(true, true).iteration_time_s;
  std::printf("gpt-22b/8 layers tp 4 pp 2 dp 2: DAG %.9f s (no interference %.9f s), SimGrid %.9f s\n", dag_on, dag_off,
              simgrid_on);
  EXPECT_GT(dag_on, dag_off);
  EXPECT_NEAR(dag_on, simgrid_on, 1e-6 * simgrid_on);
}

// The SimGrid executor runs a stage's fixed-duration ops as one chain: a TP collective on the compute stream of a
// stage whose compute all runs there joins it without loading its GPU (no op can run beside it to be slowed). Op
// by op, as a timeline records them, every collective loads the GPU while it runs: the same times. TP 8 fills a
// node, so the TP collectives have its NVLinks to themselves (fixed durations); the other traffic crosses nodes.
TEST(CommInterference, CollectivesThatSlowNothingJoinChainsWithTheSameTimes)
{
  // Each run in a child process (one SimGrid platform per process): its time and stage figures as hex floats.
  const std::vector<std::string> runs = run_isolated(2, 1, [](size_t k) {
    IterationOptions options;
    options.record_timeline = k == 1;
    const IterationResult r = workload_run(true, true, options, 8);
    if (k == 1 && r.timeline.empty())
      return std::string("no timeline");
    std::string text;
    char number[40];
    for (const double x : {r.iteration_time_s, r.stages.at(0).compute_s, r.stages.at(0).exposed_comm_s,
                           r.stages.at(1).compute_s, r.stages.at(1).exposed_comm_s}) {
      std::snprintf(number, sizeof number, "%a ", x);
      text += number;
    }
    return text;
  });
  const auto figures = [](const std::string& text) {
    std::istringstream in(text);
    std::vector<double> f;
    for (std::string word; in >> word;)
      f.push_back(std::strtod(word.c_str(), nullptr));
    return f;
  };
  const std::vector<double> chained = figures(runs.at(0)), op_by_op = figures(runs.at(1));
  ASSERT_EQ(chained.size(), 5u) << runs[0];
  ASSERT_EQ(op_by_op.size(), 5u) << runs[1];
  for (size_t i = 0; i < chained.size(); ++i)
    EXPECT_NEAR(chained[i], op_by_op[i], 1e-12 * op_by_op[0]) << i;
}

// Table 4's layer times (Korthikanti et al. 2022; the A100 model's two efficiencies were fit to the baseline row
// without interference) with and without it, estimated (one node: the DAG executor equals the SimGrid one).
TEST(CommInterference, Table4LayerTimesStayWithinTenPercent)
{
  for (const reference::Table4Row& row : reference::table4) {
    double ms[2][2] = {};
    for (int on = 0; on < 2; ++on) {
      GptConfig model = find_catalog_model("gpt-22b")->model;
      model.layers = 4;
      ParallelPlan plan = find_catalog_model("gpt-22b")->paper_plan;
      plan.tp_comm = row.sequence_parallel ? TpComm::SequenceParallel : TpComm::AllReduce;
      plan.recompute = *parse_recompute(row.recompute);
      const topo::ClusterSpec cluster = topo::load_cluster("dgx-a100", 1, {});
      const topo::ClusterGraph graph(cluster);
      GpuComputeModel gpu =
          builtin_compute_model(cluster.gpu.generation, cluster.gpu.kind, cluster.gpu.peak_bf16_flops, cluster.gpu.hbm_bytes_per_s);
      gpu.comm_interference.enabled = on == 1;
      IterationOptions options;
      options.record_timeline = true;
      const IterationResult r =
          estimate_iteration(graph, make_workload(model, plan), gpu, builtin_framework_profile("none"), options);
      double begin[2] = {1e30, 1e30}, end[2] = {0, 0};
      for (const OpSlice& slice : r.timeline) {
        const Op& op = r.programs[static_cast<size_t>(slice.program)].ops[static_cast<size_t>(slice.op)];
        if (op.layer != 1)
          continue;
        const int b = op.phase == traces::Phase::Forward ? 0 : 1;
        begin[b] = std::min(begin[b], slice.start_s);
        end[b] = std::max(end[b], slice.end_s);
      }
      for (int b = 0; b < 2; ++b)
        ms[on][b] = (end[b] - begin[b]) * 1e3;
    }
    std::printf("Table 4 %-40s forward %.2f -> %.2f ms (paper %.1f), backward %.2f -> %.2f ms (paper %.1f)\n",
                row.experiment, ms[0][0], ms[1][0], row.forward_ms, ms[0][1], ms[1][1], row.backward_ms);
    EXPECT_NEAR(ms[1][0], row.forward_ms, 0.10 * row.forward_ms) << row.experiment;
    EXPECT_NEAR(ms[1][1], row.backward_ms, 0.10 * row.backward_ms) << row.experiment;
    EXPECT_GE(ms[1][1], ms[0][1]) << row.experiment;
  }
}

} // namespace
} // namespace gputwin::sim
