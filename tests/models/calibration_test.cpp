// Calibration: parameters of a known compute model recovered from ops timed by that model, collective fits,
// nominal fallbacks, and a fit to a trace the CPU engine captured.
#include "gputwin/models/calibration.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace gputwin {
namespace {

const std::string trace_dir = GPUTWIN_TEST_DATA_DIR "/traces/";

GpuComputeModel known_model()
{
  GpuComputeModel m = builtin_compute_model(GpuGeneration::Ampere, "a100-sxm4-80gb", 312e12, 2039e9);
  m.gemm_efficiency = 0.7;
  m.gemm_k_half = 37; // between the grid's points (32, 38.05): found by the refinement
  m.memory_efficiency = 0.8;
  m.kernel_overhead_s = 5e-6;
  return m;
}

traces::Op timed(traces::Op op, const GpuComputeModel& gpu)
{
  op.duration_ns = std::llround(compute_duration_s(gpu, op) * 1e9);
  return op;
}

// GEMMs of many shapes (short k, partial waves, memory-bound ones) and memory-bound ops of many sizes, timed
// by `gpu` (only rounding to nanoseconds as noise).
traces::OpGraph synthetic_trace(const GpuComputeModel& gpu, bool with_gemms, bool with_memory_ops)
{
  traces::OpGraph graph;
  graph.ranks.push_back({});
  std::vector<traces::Op>& ops = graph.ranks[0].ops;
  if (with_gemms)
    for (int64_t m : {256, 1000, 2048, 8192})
      for (int64_t n : {512, 3072})
        for (int64_t k : {16, 64, 128, 1024, 4096})
          for (int64_t batch : {1, 8}) {
            traces::Op op;
            op.name = "gemm";
            op.gemm = {m, n, k, batch};
            op.flops = 2.0 * static_cast<double>(m * n * k * batch);
            op.bytes = 2.0 * static_cast<double>((m * k + k * n + m * n) * batch);
            ops.push_back(timed(op, gpu));
          }
  if (with_memory_ops)
    for (double bytes = 1e4; bytes < 2e9; bytes *= 3.7) {
      traces::Op op;
      op.name = bytes < 1e6 ? "small" : "large";
      op.bytes = bytes;
      ops.push_back(timed(op, gpu));
    }
  for (size_t i = 0; i < ops.size(); ++i)
    ops[i].id = static_cast<int64_t>(i);
  return graph;
}

TEST(Calibration, RecoversTheParametersOfTheModelThatTimedTheOps)
{
  const GpuComputeModel truth = known_model();
  GpuComputeModel nominal = builtin_compute_model(GpuGeneration::Ampere, "a100-sxm4-80gb", 312e12, 2039e9);
  const Calibration c = calibrate({synthetic_trace(truth, true, true)}, nominal);
  EXPECT_NEAR(c.gpu.gemm_efficiency, truth.gemm_efficiency, 1e-4 * truth.gemm_efficiency);
  EXPECT_NEAR(c.gpu.gemm_k_half, truth.gemm_k_half, 1e-3 * truth.gemm_k_half);
  EXPECT_NEAR(c.gpu.memory_efficiency, truth.memory_efficiency, 1e-4 * truth.memory_efficiency);
  EXPECT_NEAR(c.gpu.kernel_overhead_s, truth.kernel_overhead_s, 1e-3 * truth.kernel_overhead_s);
  EXPECT_EQ(c.gpu.peak_flops, nominal.peak_flops);
  EXPECT_EQ(c.gpu.multiprocessors, nominal.multiprocessors);
  EXPECT_EQ(c.traces, 1);
  EXPECT_TRUE(c.notes.empty());
  ASSERT_GE(c.fits.size(), 4U);
  EXPECT_EQ(c.fits[0].op_class, "gemm");
  EXPECT_EQ(c.fits[0].ops, 80);
  EXPECT_EQ(c.fits[1].op_class, "memory");
  EXPECT_EQ(c.fits[2].op_class, "gemm:gemm");
  for (const OpClassFit& fit : c.fits) {
    EXPECT_LT(fit.mean_abs_relative_error, 1e-4) << fit.op_class;
    EXPECT_LT(fit.max_abs_relative_error, 1e-3) << fit.op_class;
    EXPECT_NEAR(fit.modelled_s, fit.measured_s, 1e-4 * fit.measured_s) << fit.op_class;
  }
}

TEST(Calibration, ReproducesEachClassTotalAndIsDeterministic)
{
  GpuComputeModel noisy = known_model();
  traces::OpGraph graph = synthetic_trace(noisy, true, true);
  for (size_t i = 0; i < graph.ranks[0].ops.size(); ++i) // +-30% deterministic "noise"
    graph.ranks[0].ops[i].duration_ns = graph.ranks[0].ops[i].duration_ns * (7 + static_cast<int64_t>(i % 7)) / 10;
  const Calibration a = calibrate({graph}, builtin_compute_model(GpuGeneration::Ampere, "a100-sxm4-80gb", 312e12, 2039e9));
  const Calibration b = calibrate({graph}, builtin_compute_model(GpuGeneration::Ampere, "a100-sxm4-80gb", 312e12, 2039e9));
  EXPECT_EQ(a.gpu.gemm_efficiency, b.gpu.gemm_efficiency);
  EXPECT_EQ(a.gpu.gemm_k_half, b.gpu.gemm_k_half);
  EXPECT_EQ(a.gpu.kernel_overhead_s, b.gpu.kernel_overhead_s);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_NEAR(a.fits[i].modelled_s, a.fits[i].measured_s, 1e-9 * a.fits[i].measured_s) << a.fits[i].op_class;
    EXPECT_GT(a.fits[i].mean_abs_relative_error, 0.01);
  }
}

TEST(Calibration, ClassesWithoutMeasuredOpsKeepTheirNominalParameters)
{
  const GpuComputeModel nominal = builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", 989e12, 3350e9);
  const Calibration memory_only = calibrate({synthetic_trace(known_model(), false, true)}, nominal);
  EXPECT_EQ(memory_only.gpu.gemm_efficiency, nominal.gemm_efficiency);
  EXPECT_EQ(memory_only.gpu.gemm_k_half, nominal.gemm_k_half);
  EXPECT_NEAR(memory_only.gpu.memory_efficiency, 0.8 * 2039e9 / 3350e9, 1e-6);
  ASSERT_EQ(memory_only.notes.size(), 1 + nominal.memory_classes.size()); // the nominal's classes, kept
  EXPECT_NE(memory_only.notes.back().find("no GEMM"), std::string::npos);
  EXPECT_EQ(memory_only.gpu.memory_classes.size(), nominal.memory_classes.size());

  traces::OpGraph unmeasured = synthetic_trace(known_model(), true, true);
  for (traces::Op& op : unmeasured.ranks[0].ops)
    op.duration_ns = -1;
  const Calibration none = calibrate({unmeasured}, nominal);
  EXPECT_EQ(none.gpu.gemm_efficiency, nominal.gemm_efficiency);
  EXPECT_EQ(none.gpu.memory_efficiency, nominal.memory_efficiency);
  EXPECT_EQ(none.gpu.kernel_overhead_s, nominal.kernel_overhead_s);
  EXPECT_TRUE(none.fits.empty());
  EXPECT_EQ(none.notes.size(), 2 + nominal.memory_classes.size());
  EXPECT_TRUE(calibrate({}, nominal).fits.empty());
}

TEST(Calibration, CollectivesGetLatencyAndBandwidthPerKindAndGroupSize)
{
  traces::OpGraph graph;
  graph.groups.push_back({"tp", {0, 1, 2, 3}});
  graph.ranks.push_back({});
  for (double bytes : {1e3, 1e5, 1e6, 1e8}) {
    traces::Op op;
    op.kind = traces::OpKind::Collective;
    op.group = 0;
    op.bytes = bytes;
    op.duration_ns = std::llround((20e-6 + bytes / 50e9) * 1e9);
    graph.ranks[0].ops.push_back(op);
  }
  traces::Op send;
  send.kind = traces::OpKind::Send;
  send.bytes = 4096;
  for (int64_t ns : {1000, 3000}) {
    send.duration_ns = ns;
    graph.ranks[0].ops.push_back(send);
  }
  const Calibration c = calibrate({graph}, nominal_cpu_compute_model());
  ASSERT_EQ(c.collectives.size(), 2U);
  EXPECT_EQ(c.collectives[0].op, CollectiveOp::AllReduce);
  EXPECT_EQ(c.collectives[0].ranks, 4);
  EXPECT_EQ(c.collectives[0].samples, 4);
  EXPECT_NEAR(c.collectives[0].latency_s, 20e-6, 1e-9);
  EXPECT_NEAR(c.collectives[0].bytes_per_s, 50e9, 50e9 * 1e-5);
  EXPECT_LT(c.collectives[0].mean_abs_relative_error, 1e-5);
  EXPECT_EQ(c.collectives[1].op, CollectiveOp::SendRecv);
  EXPECT_EQ(c.collectives[1].ranks, 2);
  EXPECT_DOUBLE_EQ(c.collectives[1].latency_s, 2e-6); // one size: latency only, the mean
  EXPECT_EQ(c.collectives[1].bytes_per_s, 0);
  EXPECT_DOUBLE_EQ(c.collectives[1].mean_abs_relative_error, 0.5 * (1.0 + 1.0 / 3));
}

TEST(Calibration, FitToACapturedCpuTracePredictsItsComputeTime)
{
  // Captured by: gputwin-engine train --hidden 128 --heads 4 --layers 4 --seq-len 64 --vocab 128 --steps 5
  const traces::OpGraph graph = traces::read_op_graph_file(trace_dir + "cpu-tp1.json");
  const Calibration c = calibrate({graph}, nominal_cpu_compute_model());
  for (double p : {c.gpu.gemm_efficiency, c.gpu.gemm_k_half, c.gpu.memory_efficiency, c.gpu.kernel_overhead_s})
    EXPECT_TRUE(std::isfinite(p) && p >= 0) << p;
  EXPECT_GT(c.gpu.gemm_efficiency, 0);
  EXPECT_GT(c.gpu.memory_efficiency, 0);
  ASSERT_GE(c.fits.size(), 2U);
  for (const OpClassFit& fit : c.fits) {
    EXPECT_TRUE(std::isfinite(fit.mean_abs_relative_error) && std::isfinite(fit.max_abs_relative_error));
    EXPECT_GT(fit.ops, 0);
  }
  double measured_s = 0, modelled_s = 0;
  for (const traces::Op& op : graph.ranks[0].ops)
    if (op.kind == traces::OpKind::Compute && op.duration_ns > 0) {
      measured_s += static_cast<double>(op.duration_ns) * 1e-9;
      modelled_s += compute_duration_s(c.gpu, op);
    }
  EXPECT_NEAR(modelled_s, measured_s, 0.10 * measured_s);
}

TEST(Calibration, CapturedMultiRankTraceFitsItsCollectives)
{
  // gputwin-engine train --hidden 64 --heads 4 --layers 2 --seq-len 32 --vocab 128 --steps 4 --tp 2 --pp 2
  //   --global-batch 2: TP all-reduces and pipeline send/recv between threads (durations include waiting).
  const Calibration c =
      calibrate({traces::read_op_graph_file(trace_dir + "cpu-tp2-pp2.json")}, nominal_cpu_compute_model());
  ASSERT_EQ(c.collectives.size(), 2U);
  for (const CollectiveFit& fit : c.collectives) {
    EXPECT_GT(fit.samples, 0);
    EXPECT_TRUE(std::isfinite(fit.latency_s) && std::isfinite(fit.bytes_per_s) &&
                std::isfinite(fit.mean_abs_relative_error));
  }
}

} // namespace
} // namespace gputwin

namespace gputwin {
namespace {

TEST(Calibration, BuiltinH100ModelIsTheFitToTheCommittedH100Measurements)
{
  // The built-in H100 parameters say where they come from; refitting the committed measurements (see
  // scripts/gpu-measure-kernels.py) on the built-in GEMM table must give them back.
  const traces::OpGraph trace =
      traces::read_op_graph_file(GPUTWIN_SOURCE_DIR "/traces/captured/NVIDIA-H100-80GB-HBM3/kernels.trace.json");
  const GpuComputeModel builtin = builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", 989e12, 3.35e12);
  const Calibration fit = calibrate({trace}, builtin);
  EXPECT_NEAR(fit.gpu.gemm_efficiency, builtin.gemm_efficiency, 1e-3);
  EXPECT_NEAR(fit.gpu.gemm_k_half, builtin.gemm_k_half, 0.5);
  EXPECT_NEAR(fit.gpu.memory_efficiency, builtin.memory_efficiency, 1e-3);
  EXPECT_NEAR(fit.gpu.kernel_overhead_s, builtin.kernel_overhead_s, 1e-7);
  ASSERT_EQ(fit.gpu.memory_classes.size(), builtin.memory_classes.size());
  for (const auto& [c, params] : builtin.memory_classes) {
    SCOPED_TRACE(to_string(c));
    ASSERT_TRUE(fit.gpu.memory_classes.count(c));
    EXPECT_NEAR(fit.gpu.memory_classes.at(c).relative_efficiency, params.relative_efficiency, 1e-3);
    EXPECT_NEAR(fit.gpu.memory_classes.at(c).overhead_s, params.overhead_s, 1e-8);
  }
  // The errors sim/README.md states: GEMMs on the table beat the analytic curve; classes beat one efficiency.
  const auto row = [&](const std::string& name) {
    for (const OpClassFit& f : fit.fits)
      if (f.op_class == name)
        return f;
    ADD_FAILURE() << "no fit row " << name;
    return OpClassFit{};
  };
  EXPECT_LT(row("gemm").mean_abs_relative_error, 0.08);
  EXPECT_LT(row("gemm").mean_abs_relative_error, row("gemm (analytic)").mean_abs_relative_error);
  EXPECT_LT(row("memory").mean_abs_relative_error, 0.12);
  EXPECT_LT(row("memory").mean_abs_relative_error, row("memory (one efficiency)").mean_abs_relative_error);
  for (const char* c : {"elementwise", "layernorm", "gelu", "softmax"})
    EXPECT_EQ(row(c).ops, 7) << c;
}

TEST(Calibration, RecoversPerClassBandwidthAndOverhead)
{
  GpuComputeModel truth = builtin_compute_model(GpuGeneration::Ampere, "a100-sxm4-80gb", 312e12, 2039e9);
  truth.kernel_overhead_s = 3e-6;
  truth.memory_efficiency = 0.7;
  truth.memory_classes[KernelClass::LayerNorm] = {0.6, 1e-6};
  truth.memory_classes[KernelClass::Elementwise] = {1.2, 2e-6};
  truth.memory_classes[KernelClass::Softmax] = {0.5, 0};
  traces::OpGraph graph;
  graph.ranks.push_back({});
  // Names of the workload generator and the engine.
  for (const char* name : {"ln1.fwd", "final_ln", "fc1.bias", "residual.bwd", "attn.softmax.fwd"})
    for (double bytes = 1e5; bytes < 1e9; bytes *= 4.3) {
      traces::Op op;
      op.name = name;
      op.bytes = bytes;
      op.duration_ns = std::llround(compute_duration_s(truth, op) * 1e9);
      graph.ranks[0].ops.push_back(op);
    }
  GpuComputeModel nominal = builtin_compute_model(GpuGeneration::Ampere, "a100-sxm4-80gb", 312e12, 2039e9);
  const Calibration c = calibrate({graph}, nominal);
  // The global line is the mixture's (the default for classes not measured); each class's own bandwidth and
  // overhead come back, and the global overhead is the smallest class overhead.
  EXPECT_NEAR(c.gpu.kernel_overhead_s, 3e-6, 1e-8);
  ASSERT_EQ(c.gpu.memory_classes.size(), 3U);
  for (const auto& [kernel_class, params] : truth.memory_classes) {
    SCOPED_TRACE(to_string(kernel_class));
    EXPECT_NEAR(memory_class_bytes_per_s(c.gpu, kernel_class), memory_class_bytes_per_s(truth, kernel_class),
                1e-4 * memory_class_bytes_per_s(truth, kernel_class));
    EXPECT_NEAR(c.gpu.memory_classes.at(kernel_class).overhead_s, params.overhead_s, 1e-8);
  }
  // Rows: all memory ops, one efficiency for all of them, then each class with and without its own line.
  ASSERT_GE(c.fits.size(), 8U);
  EXPECT_EQ(c.fits[0].op_class, "memory");
  EXPECT_EQ(c.fits[1].op_class, "memory (one efficiency)");
  EXPECT_EQ(c.fits[2].op_class, "layernorm");
  EXPECT_EQ(c.fits[3].op_class, "layernorm (one efficiency)");
  EXPECT_LT(c.fits[0].mean_abs_relative_error, 1e-4);
  EXPECT_GT(c.fits[1].mean_abs_relative_error, 0.1);
}

TEST(Calibration, FitsTheTableLevelAndComparesWithTheAnalyticCurve)
{
  GpuComputeModel truth = builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", 989e12, 3.35e12);
  truth.gemm_efficiency = 0.7;
  truth.gemm_k_half = 200;
  traces::OpGraph graph = synthetic_trace(truth, true, false);
  GpuComputeModel nominal = builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", 989e12, 3.35e12);
  const Calibration c = calibrate({graph}, nominal);
  EXPECT_NEAR(c.gpu.gemm_efficiency, 0.7, 1e-4);
  EXPECT_NEAR(c.gpu.gemm_k_half, 200, 1);
  EXPECT_EQ(c.gpu.gemm_table, nominal.gemm_table);
  ASSERT_GE(c.fits.size(), 2U);
  EXPECT_EQ(c.fits[0].op_class, "gemm");
  EXPECT_EQ(c.fits[1].op_class, "gemm (analytic)");
  EXPECT_LT(c.fits[0].mean_abs_relative_error, 1e-3);
  EXPECT_GT(c.fits[1].mean_abs_relative_error, c.fits[0].mean_abs_relative_error);
}

} // namespace
} // namespace gputwin
