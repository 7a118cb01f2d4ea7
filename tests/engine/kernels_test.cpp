// CPU kernels against independent references: GEMM against a double-precision triple loop over the operands
// as bf16 (every transpose, bf16 and f32 operands, sizes that straddle the cache blocks), the backward kernels against central finite
// differences of their forwards, and counter-based dropout (shard invariance, bit-exact regeneration).
#include "gputwin/engine/backend/counter_rng.hpp"
#include "gputwin/engine/backend/cpu_backend.hpp"
#include "kernel_test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

namespace gputwin::engine {
namespace {

using Kernels = testing::KernelTest;
using testing::finite_difference_check;

TEST_F(Kernels, GemmMatchesDoublePrecisionReference)
{
  const int64_t m = 70, n = 530, k = 300; // past block_m 64, block_n 512, block_k 256
  for (const DType in_type : {DType::F32, DType::BF16})
    for (const bool ta : {false, true})
      for (const bool tb : {false, true}) {
        const Tensor a = random(in_type, {m * k});
        const Tensor b = random(in_type, {k * n});
        Tensor c = random(DType::F32, {m, n});
        Tensor c0 = zeros(DType::F32, {m, n});
        cpu.copy(c0, c, m * n);
        cpu.gemm(c, a, ta, b, tb, m, n, k, 0.5f, 1.0f);
        double worst = 0;
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j) {
            double dot = 0, magnitude = 0;
            for (int64_t p = 0; p < k; ++p) {
              // Products take bf16 operands: an f32 operand is rounded first (cpu_access.hpp load_operand).
              const double x = round_to_bf16(load_float(a, ta ? p * m + i : i * k + p));
              const double y = round_to_bf16(load_float(b, tb ? j * k + p : p * n + j));
              dot += x * y;
              magnitude += std::abs(x * y);
            }
            const double expected = 0.5 * dot + c0.f32()[i * n + j];
            worst = std::max(worst, std::abs(c.f32()[i * n + j] - expected) / (magnitude + 1.0));
          }
        EXPECT_LT(worst, 1e-6) << "transpose " << ta << tb << " " << to_string(in_type);
      }
}

TEST_F(Kernels, GemmIntoBf16RoundsTheFp32Result)
{
  const Tensor a = random(DType::BF16, {33, 40}), b = random(DType::BF16, {40, 17});
  Tensor c32 = zeros(DType::F32, {33, 17}), c16 = zeros(DType::BF16, {33, 17});
  cpu.gemm(c32, a, false, b, false, 33, 17, 40, 1.0f, 0.0f);
  cpu.gemm(c16, a, false, b, false, 33, 17, 40, 1.0f, 0.0f);
  for (int64_t i = 0; i < 33 * 17; ++i)
    ASSERT_EQ(c16.bf16()[i], float_to_bf16(c32.f32()[i]));
}

TEST_F(Kernels, LayernormGeluSoftmaxBackwardMatchFiniteDifferences)
{
  const int64_t rows = 6, cols = 24;
  Tensor x = random(DType::F32, {rows, cols}), d_out = random(DType::F32, {rows, cols});
  Tensor gamma = random(DType::F32, {cols}), beta = random(DType::F32, {cols});
  Tensor out = zeros(DType::F32, {rows, cols}), d_in = zeros(DType::F32, {rows, cols});
  Tensor dg = zeros(DType::F32, {cols}), db = zeros(DType::F32, {cols});
  cpu.layernorm_backward(d_in, dg, db, d_out, x, gamma, rows, cols, 1e-5f);
  finite_difference_check(
      x, d_out, d_in, [&](Tensor& o) { cpu.layernorm_forward(o, x, gamma, beta, rows, cols, 1e-5f); }, out,
      "layernorm");
  cpu.gelu_backward(d_in, d_out, x, rows * cols);
  finite_difference_check(
      x, d_out, d_in, [&](Tensor& o) { cpu.gelu_forward(o, x, rows * cols); }, out, "gelu");
  cpu.squared_relu_backward(d_in, d_out, x, rows * cols);
  finite_difference_check(
      x, d_out, d_in, [&](Tensor& o) { cpu.squared_relu_forward(o, x, rows * cols); }, out, "squared relu");
  const int64_t seq = 6; // rows = 6 rows of one (sample, head): row i attends to keys 0..i
  Tensor probs = zeros(DType::F32, {rows, seq}), d_scores = zeros(DType::F32, {rows, seq});
  Tensor d_probs = random(DType::F32, {rows, seq});
  Tensor scores = random(DType::F32, {rows, seq});
  cpu.causal_softmax_forward(probs, scores, rows, seq);
  cpu.causal_softmax_backward(d_scores, d_probs, probs, rows, seq);
  Tensor p = zeros(DType::F32, {rows, seq});
  finite_difference_check(
      scores, d_probs, d_scores, [&](Tensor& o) { cpu.causal_softmax_forward(o, scores, rows, seq); }, p,
      "causal softmax");
}

// The attention products read bf16 operands (an fp32 one is rounded), so each product is differentiated where
// rounding is exact: inputs are multiples of 2^-6 in (-2, 2) and the step is 2^-6, so every perturbed input is a
// bf16 value too, and the upstream gradients are bf16. Both products are (bi)linear, so central differences are
// exact up to fp32 sums. The softmax between them is checked above; the three compose the attention core.
TEST_F(Kernels, AttentionBackwardMatchesFiniteDifferences)
{
  const AttentionDims d{2, 2, 5, 4};
  const float grid = 1.0f / 64.0f;
  auto on_grid = [&](std::vector<int64_t> shape) {
    Tensor t = random(DType::F32, std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i)
      t.f32()[i] = std::clamp(std::round(t.f32()[i] / grid), -120.0f, 120.0f) * grid;
    return t;
  };
  Tensor qkv = on_grid({d.seq, d.batch, 3 * d.heads * d.head_dim});
  Tensor probs = on_grid({d.batch, d.heads, d.seq, d.seq});
  // Scores Q K^T / sqrt(d): the Q and K parts of d_qkv.
  const Tensor d_scores = random(DType::BF16, {d.batch, d.heads, d.seq, d.seq});
  Tensor scores = zeros(DType::F32, {d.batch, d.heads, d.seq, d.seq});
  Tensor d_qkv = zeros(DType::F32, {d.seq, d.batch, 3 * d.heads * d.head_dim});
  cpu.attention_scores_backward(d_qkv, d_scores, qkv, d);
  finite_difference_check(
      qkv, d_scores, d_qkv, [&](Tensor& o) { cpu.attention_scores_forward(o, qkv, d); }, scores, "attention scores",
      grid);
  // Context P V: d_probs and the V part of d_qkv.
  const Tensor d_context = random(DType::BF16, {d.seq, d.batch, d.heads * d.head_dim});
  Tensor context = zeros(DType::F32, {d.seq, d.batch, d.heads * d.head_dim});
  Tensor d_probs = zeros(DType::F32, {d.batch, d.heads, d.seq, d.seq});
  Tensor d_v = zeros(DType::F32, {d.seq, d.batch, 3 * d.heads * d.head_dim});
  cpu.attention_context_backward(d_probs, d_v, d_context, probs, qkv, d);
  const auto context_forward = [&](Tensor& o) { cpu.attention_context_forward(o, probs, qkv, d); };
  finite_difference_check(probs, d_context, d_probs, context_forward, context, "attention context (probs)", grid);
  finite_difference_check(qkv, d_context, d_v, context_forward, context, "attention context (v)", grid);
}

TEST_F(Kernels, DropoutMasksDependOnlyOnLogicalPosition)
{
  const int64_t s = 8, b = 2, h = 16;
  const Tensor in = random(DType::F32, {s, b, h});
  DropoutSite full{dropout_key(7, 3, 1, DropoutSiteKind::MlpOutput), 0.25f, {s, b, h, 1}, {0, 0, 0, 0}, {s, 4, h, 1}};
  Tensor out = zeros(DType::F32, {s, b, h}), mask = zeros(DType::U8, {s, b, h});
  cpu.dropout_forward(out, mask, in, full);
  int64_t kept = 0;
  for (int64_t i = 0; i < mask.numel(); ++i) {
    kept += mask.u8()[i];
    EXPECT_EQ(out.f32()[i], mask.u8()[i] ? in.f32()[i] * (1.0f / 0.75f) : 0.0f);
  }
  EXPECT_NEAR(static_cast<double>(kept) / static_cast<double>(mask.numel()), 0.75, 0.06);
  // The second half of the sequence, as a sequence-parallel rank holds it, draws the same mask elements.
  DropoutSite shard = full;
  shard.local_dims = {s / 2, b, h, 1};
  shard.offsets = {s / 2, 0, 0, 0};
  const Tensor half = in.view(s / 2 * b * h, {s / 2, b, h});
  Tensor out2 = zeros(DType::F32, {s / 2, b, h}), mask2 = zeros(DType::U8, {s / 2, b, h});
  cpu.dropout_forward(out2, mask2, half, shard);
  for (int64_t i = 0; i < mask2.numel(); ++i)
    ASSERT_EQ(mask2.u8()[i], mask.u8()[s / 2 * b * h + i]);
  // Regenerated (recompute) bit-exactly; another iteration draws another mask.
  Tensor mask3 = zeros(DType::U8, {s, b, h});
  cpu.dropout_forward(out, mask3, in, full);
  EXPECT_EQ(0, std::memcmp(mask.u8(), mask3.u8(), static_cast<size_t>(mask.numel())));
  full.key = dropout_key(7, 4, 1, DropoutSiteKind::MlpOutput);
  cpu.dropout_forward(out, mask3, in, full);
  EXPECT_NE(0, std::memcmp(mask.u8(), mask3.u8(), static_cast<size_t>(mask.numel())));
}

TEST_F(Kernels, MemoryAccountantTracksPurposesAndPeaks)
{
  MemoryAccountant m;
  {
    Tensor a(m, MemoryPurpose::Workspace, DType::BF16, {10, 10});
    Tensor b(m, MemoryPurpose::Workspace, DType::F32, {5});
    EXPECT_EQ(m.current_bytes(MemoryPurpose::Workspace), 220);
    a.retag(MemoryPurpose::LayerActivations);
    EXPECT_EQ(m.current_bytes(MemoryPurpose::Workspace), 20);
    EXPECT_EQ(m.current_bytes(MemoryPurpose::LayerActivations), 200);
    const Tensor v = a.view(10, {5, 2}); // views count nothing
    EXPECT_EQ(m.current_total_bytes(), 220);
  }
  EXPECT_EQ(m.current_total_bytes(), 0);
  EXPECT_EQ(m.peak_bytes(MemoryPurpose::Workspace), 220);
  EXPECT_EQ(m.peak_bytes(MemoryPurpose::LayerActivations), 200);
  EXPECT_EQ(m.peak_total_bytes(), 220);
}

} // namespace
} // namespace gputwin::engine
