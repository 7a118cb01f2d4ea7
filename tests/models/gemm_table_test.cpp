// GEMM tables: exact at measured points, bounded and monotone between them, batch folding and edge clamping
// outside, file validation; and the GPU compute model reading one (table inside the grid, the analytic curve
// scaled to the table beyond it, gemm_efficiency and memory_efficiency still scaling everything).
#include "gputwin/models/gemm_table.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/common/input_error.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace gputwin {
namespace {

const std::string h100_csv = GPUTWIN_SOURCE_DIR "/models/compute/data/h100_gemm_table.csv";

GemmTable parse(const std::string& text)
{
  std::istringstream in(text);
  return GemmTable::parse(in, "t.csv");
}

// The InputError message of parsing `text` ("" if it parses).
std::string parse_error(const std::string& text)
{
  try {
    parse(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

traces::Op gemm_op(int64_t m, int64_t n, int64_t k, int64_t batch)
{
  traces::Op op;
  op.name = "gemm";
  op.gemm = {m, n, k, batch};
  op.flops = 2.0 * static_cast<double>(m * n * k * batch);
  op.bytes = 2.0 * static_cast<double>((m * k + k * n + m * n) * batch);
  return op;
}

TEST(GemmTable, BuiltinH100IsTheCommittedFileAndExactAtEveryPoint)
{
  const std::shared_ptr<const GemmTable> table = builtin_gemm_table("h100");
  ASSERT_TRUE(table);
  EXPECT_EQ(builtin_gemm_table("a100"), nullptr);
  EXPECT_EQ(table->batches(), (std::vector<double>{1, 2, 4}));
  EXPECT_EQ(table->ks(), (std::vector<double>{256, 512, 1024, 2048, 4096}));
  std::ifstream in(h100_csv);
  std::string line;
  int rows = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line[0] == 'b')
      continue;
    int64_t b = 0, m = 0, n = 0, k = 0;
    double flops = 0;
    char comma = 0;
    std::istringstream row(line);
    row >> b >> comma >> m >> comma >> n >> comma >> k >> comma >> flops;
    const GemmPoint p = table->edge({m, n, k, b});
    EXPECT_EQ(table->flops_per_s(p), flops) << line;
    ++rows;
  }
  EXPECT_EQ(rows, 375); // XLA's sm_90 bf16 table: b 1, 2, 4 x m, n, k 256 ... 4096
  EXPECT_DOUBLE_EQ(table->max_flops_per_s(), 808699906572796.0);
}

TEST(GemmTable, BetweenPointsBoundedByTheCellAndMonotoneWhereTheTableIs)
{
  const std::shared_ptr<const GemmTable> table = builtin_gemm_table("h100");
  // Along k at m = n = 4096 the measurements rise (392 ... 783 TFLOP/s): so does every point between.
  double previous = 0;
  for (double k = 256; k <= 4096; k *= 1.07) {
    const double f = table->flops_per_s({4096, 4096, k, 1});
    EXPECT_GE(f, previous) << k;
    previous = f;
  }
  // Any point inside a cell lies between the cell's smallest and largest corner.
  const GemmPoint p{700, 3000, 1500, 3};
  double lo = 1e300, hi = 0;
  for (double m : {512, 1024})
    for (double n : {2048, 4096})
      for (double k : {1024, 2048})
        for (double b : {2, 4}) {
          const double f = table->flops_per_s({m, n, k, b});
          lo = std::min(lo, f), hi = std::max(hi, f);
        }
  EXPECT_GT(table->flops_per_s(p), lo);
  EXPECT_LT(table->flops_per_s(p), hi);
}

TEST(GemmTable, BatchesAboveTheTableFoldIntoRowsAndTheRestClampsToTheEdge)
{
  const std::shared_ptr<const GemmTable> table = builtin_gemm_table("h100");
  const GemmPoint inside = table->edge({1000, 300, 2000, 2});
  EXPECT_EQ(inside.m, 1000);
  EXPECT_EQ(inside.batch, 2);
  const GemmPoint folded = table->edge({512, 1024, 1024, 16}); // 16 products = 4 of 2048 rows
  EXPECT_EQ(folded.m, 2048);
  EXPECT_EQ(folded.batch, 4);
  EXPECT_EQ(table->flops_per_s(folded), table->flops_per_s({2048, 1024, 1024, 4}));
  const GemmPoint clamped = table->edge({2048, 96, 2048, 32}); // attention context at head dim 96
  EXPECT_EQ(clamped.m, 4096);
  EXPECT_EQ(clamped.n, 256);
  EXPECT_EQ(clamped.k, 2048);
  EXPECT_EQ(clamped.batch, 4);
}

TEST(GemmTable, BadFilesNameTheLineAndTheField)
{
  const std::string head = "# comment\nbatch,m,n,k,flops_per_s\n";
  EXPECT_EQ(parse_error(head + "1,256,256,256,1e12\n"), "");
  EXPECT_EQ(parse_error("batch,m,n,k,time\n"), "t.csv:1: expected the header 'batch,m,n,k,flops_per_s', got "
                                               "'batch,m,n,k,time'");
  EXPECT_EQ(parse_error(head + "1,256,x,256,1e12\n"), "t.csv:3: n: expected a positive integer, got 'x'");
  EXPECT_EQ(parse_error(head + "0,256,256,256,1e12\n"), "t.csv:3: batch: expected a positive integer, got '0'");
  EXPECT_EQ(parse_error(head + "1,256,256,256,-5\n"), "t.csv:3: flops_per_s: expected a finite number > 0, got '-5'");
  EXPECT_EQ(parse_error(head + "1,256,256,256,inf\n"),
            "t.csv:3: flops_per_s: expected a finite number > 0, got 'inf'");
  EXPECT_EQ(parse_error(head + "1,256,256,1e12\n"), "t.csv:3: expected 5 fields (batch,m,n,k,flops_per_s), got 4");
  EXPECT_EQ(parse_error(head + "1,256,256,256,1e12,\n"),
            "t.csv:3: expected 5 fields (batch,m,n,k,flops_per_s), got 6");
  EXPECT_EQ(parse_error(head + "1,256,256,256,1e12\n1,256,256,256,2e12\n"),
            "t.csv:4: batch 1, m 256, n 256, k 256: duplicate row");
  EXPECT_EQ(parse_error(head + "1,256,256,256,1e12\n1,512,256,256,1e12\n2,256,256,256,1e12\n"),
            "t.csv: no row for batch 2, m 512, n 256, k 256 (every batch needs the full grid of the table's m, n "
            "and k values)");
  EXPECT_EQ(parse_error("# only comments\n"), "t.csv: no rows (expected the header 'batch,m,n,k,flops_per_s' and rows)");
  EXPECT_THROW(GemmTable::load("/nonexistent/table.csv"), InputError);
}

TEST(GemmTableModel, InsideTheGridTheModelIsTheTableAtItsLevel)
{
  GpuComputeModel gpu = builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", 989e12, 3.35e12);
  ASSERT_TRUE(gpu.gemm_table);
  const GemmTable& table = *gpu.gemm_table;
  gpu.gemm_efficiency = table.max_flops_per_s() / gpu.peak_flops; // the table's own level
  gpu.kernel_overhead_s = 0;
  for (const traces::Op& op : {gemm_op(4096, 4096, 4096, 1), gemm_op(1024, 2048, 512, 2), gemm_op(777, 1500, 3000, 3)})
    EXPECT_NEAR(compute_duration_s(gpu, op), op.flops / table.flops_per_s(table.edge(op.gemm)),
                1e-12 * compute_duration_s(gpu, op));
  // gemm_efficiency still sets the level: 10% less efficiency, 1/0.9 the time of a compute-bound GEMM.
  const traces::Op big = gemm_op(4096, 4096, 4096, 1);
  const double before = compute_duration_s(gpu, big);
  gpu.gemm_efficiency *= 0.9;
  EXPECT_NEAR(compute_duration_s(gpu, big), before / 0.9, 1e-12 * before);
}

TEST(GemmTableModel, BeyondTheGridTheCurveIsScaledToAgreeAtTheEdge)
{
  const GpuComputeModel gpu = builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", 989e12, 3.35e12);
  // Continuous across the grid's ends: k just below 256, m just above 4096.
  const double at_k = modelled_gemm_efficiency(gpu, {2048, 2048, 256, 1});
  EXPECT_NEAR(modelled_gemm_efficiency(gpu, {2048, 2048, 255, 1}), at_k, 0.01 * at_k);
  const double at_m = modelled_gemm_efficiency(gpu, {4096, 2048, 2048, 1});
  EXPECT_NEAR(modelled_gemm_efficiency(gpu, {4097 + 127, 2048, 2048, 1}), at_m, 0.05 * at_m);
  // Short k beyond the table falls as the curve's k / (k + k_half) does.
  const double e64 = modelled_gemm_efficiency(gpu, {2048, 2048, 64, 1});
  EXPECT_NEAR(e64 / at_k, (64 / (64 + gpu.gemm_k_half)) / (256 / (256 + gpu.gemm_k_half)), 1e-9);
  // Large GEMMs beyond the grid stay near the table's best, below peak.
  const double large = modelled_gemm_efficiency(gpu, {16384, 16384, 16384, 1});
  EXPECT_GT(large, 0.9 * gpu.gemm_efficiency);
  EXPECT_LT(large, 1.0);
}

TEST(GemmTableModel, MemoryEfficiencyScalesEveryClassAndTheGemmMemoryTerm)
{
  GpuComputeModel gpu = builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", 989e12, 3.35e12);
  gpu.memory_classes[KernelClass::LayerNorm] = {1.2, 2e-6};
  traces::Op ln;
  ln.name = "ln1.fwd";
  ln.bytes = 1e8;
  traces::Op other = ln;
  other.name = "mystery";
  const traces::Op skinny = gemm_op(2048, 64, 2048, 64); // memory-bound attention product
  const double ln_s = compute_duration_s(gpu, ln), other_s = compute_duration_s(gpu, other),
               skinny_s = compute_duration_s(gpu, skinny);
  EXPECT_NEAR(ln_s, gpu.kernel_overhead_s + 2e-6 + 1e8 / (3.35e12 * gpu.memory_efficiency * 1.2), 1e-15);
  EXPECT_NEAR(other_s, gpu.kernel_overhead_s + 1e8 / (3.35e12 * gpu.memory_efficiency), 1e-15);
  gpu.memory_efficiency *= 0.5;
  EXPECT_NEAR(compute_duration_s(gpu, ln) - gpu.kernel_overhead_s - 2e-6, 2 * (ln_s - gpu.kernel_overhead_s - 2e-6),
              1e-12);
  EXPECT_NEAR(compute_duration_s(gpu, other), 2 * other_s, 1e-12);
  EXPECT_NEAR(compute_duration_s(gpu, skinny), 2 * skinny_s, 1e-9 * skinny_s);
}

TEST(GemmTableModel, A100KeepsTheAnalyticCurve)
{
  const GpuComputeModel a100 = builtin_compute_model(GpuGeneration::Ampere, "a100-sxm4-80gb", 312e12, 2039e9);
  EXPECT_FALSE(a100.gemm_table);
  EXPECT_TRUE(a100.memory_classes.empty());
  const traces::Op op = gemm_op(8192, 3072, 6144, 1);
  EXPECT_EQ(modelled_gemm_efficiency(a100, op.gemm), gemm_efficiency(a100, op.gemm));
}

} // namespace
} // namespace gputwin
