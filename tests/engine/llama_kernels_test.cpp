// The CPU kernels of Llama-style layers against central finite differences of their forwards: RMSNorm (input
// and gamma), rotary embedding (Q heads and K groups rotated, V untouched, positions from first_position),
// SwiGLU, and grouped-query attention (4 query heads over 2 K/V groups) in the unfused products and in the fused
// flash kernels, whose gradients of K and V sum over the heads of a group.
#include "gputwin/engine/backend/cpu_backend.hpp"
#include "kernel_test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace gputwin::engine {
namespace {

using LlamaKernels = testing::KernelTest;
using testing::finite_difference_check;

TEST_F(LlamaKernels, RmsnormBackwardMatchesFiniteDifferences)
{
  const int64_t rows = 6, cols = 24;
  Tensor x = random(DType::F32, {rows, cols}), d_out = random(DType::F32, {rows, cols});
  Tensor gamma = random(DType::F32, {cols});
  Tensor out = zeros(DType::F32, {rows, cols}), d_in = zeros(DType::F32, {rows, cols}), dg = zeros(DType::F32, {cols});
  cpu.rmsnorm_backward(d_in, dg, d_out, x, gamma, rows, cols, 1e-5f);
  const auto forward = [&](Tensor& o) { cpu.rmsnorm_forward(o, x, gamma, rows, cols, 1e-5f); };
  finite_difference_check(x, d_out, d_in, forward, out, "rmsnorm input");
  finite_difference_check(gamma, d_out, dg, forward, out, "rmsnorm gamma");
  // No mean is subtracted: a constant row keeps its sign (a layernorm would map it to beta).
  Tensor ones = zeros(DType::F32, {1, cols}), unit = zeros(DType::F32, {cols}), y = zeros(DType::F32, {1, cols});
  for (int64_t c = 0; c < cols; ++c) {
    ones.f32()[c] = 3.0f;
    unit.f32()[c] = 1.0f;
  }
  cpu.rmsnorm_forward(y, ones, unit, 1, cols, 0.0f);
  EXPECT_FLOAT_EQ(y.f32()[0], 1.0f);
}

TEST_F(LlamaKernels, RopeBackwardMatchesFiniteDifferencesAndRotatesOnlyQAndK)
{
  RopeDims r;
  r.attention = AttentionDims{2, 4, 5, 8, 2}; // 4 query heads, 2 K/V groups
  r.first_position = 3;
  const AttentionDims& d = r.attention;
  const std::vector<int64_t> shape{d.seq, d.batch, d.qkv_width()};
  Tensor x = random(DType::F32, shape), d_out = random(DType::F32, shape);
  Tensor out = zeros(DType::F32, shape), d_in = zeros(DType::F32, shape);
  cpu.copy(d_in, d_out, d_in.numel());
  cpu.rope_backward(d_in, r);
  const auto forward = [&](Tensor& o) {
    cpu.copy(o, x, x.numel());
    cpu.rope_forward(o, r);
  };
  finite_difference_check(x, d_out, d_in, forward, out, "rope");
  forward(out);
  const int64_t rotated = (d.heads + d.groups()) * d.head_dim;
  double moved = 0;
  for (int64_t t = 0; t < d.seq * d.batch; ++t)
    for (int64_t c = 0; c < d.qkv_width(); ++c) {
      const int64_t i = t * d.qkv_width() + c;
      if (c >= rotated)
        ASSERT_EQ(out.f32()[i], x.f32()[i]) << "V element " << c << " changed";
      else
        moved += std::abs(out.f32()[i] - x.f32()[i]);
    }
  EXPECT_GT(moved, 1.0);
  // Pair (0, d/2) of query head 1 at token 0 of sample 0 turns by position 3 (frequency 1).
  const int64_t at = 1 * d.head_dim;
  const float x1 = x.f32()[at], x2 = x.f32()[at + d.head_dim / 2];
  EXPECT_NEAR(out.f32()[at], x1 * std::cos(3.0f) - x2 * std::sin(3.0f), 1e-5);
  EXPECT_NEAR(out.f32()[at + d.head_dim / 2], x2 * std::cos(3.0f) + x1 * std::sin(3.0f), 1e-5);
}

TEST_F(LlamaKernels, SwigluBackwardMatchesFiniteDifferences)
{
  const int64_t rows = 5, cols = 12;
  Tensor in = random(DType::F32, {rows, 2 * cols}), d_out = random(DType::F32, {rows, cols});
  Tensor out = zeros(DType::F32, {rows, cols}), d_in = zeros(DType::F32, {rows, 2 * cols});
  cpu.swiglu_backward(d_in, d_out, in, rows, cols);
  finite_difference_check(
      in, d_out, d_in, [&](Tensor& o) { cpu.swiglu_forward(o, in, rows, cols); }, out, "swiglu");
  // out = silu(gate) * up, element (0, 0).
  const float gate = in.f32()[0], up = in.f32()[cols];
  cpu.swiglu_forward(out, in, rows, cols);
  EXPECT_NEAR(out.f32()[0], gate / (1.0f + std::exp(-gate)) * up, 1e-6);
}

// As AttentionBackwardMatchesFiniteDifferences (kernels_test.cpp): inputs on a 2^-6 grid so every perturbed
// operand is a bf16 value, the products (bi)linear, central differences exact up to fp32 sums. With 2 heads
// per group, the K and V gradients are the sums over the group's heads.
TEST_F(LlamaKernels, GroupedQueryAttentionProductsMatchFiniteDifferences)
{
  const AttentionDims d{2, 4, 5, 4, 2};
  const float grid = 1.0f / 64.0f;
  auto on_grid = [&](std::vector<int64_t> shape) {
    Tensor t = random(DType::F32, std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i)
      t.f32()[i] = std::clamp(std::round(t.f32()[i] / grid), -120.0f, 120.0f) * grid;
    return t;
  };
  Tensor qkv = on_grid({d.seq, d.batch, d.qkv_width()});
  Tensor probs = on_grid({d.batch, d.heads, d.seq, d.seq});
  const Tensor d_scores = random(DType::BF16, {d.batch, d.heads, d.seq, d.seq});
  Tensor scores = zeros(DType::F32, {d.batch, d.heads, d.seq, d.seq});
  Tensor d_qkv = zeros(DType::F32, {d.seq, d.batch, d.qkv_width()});
  cpu.attention_scores_backward(d_qkv, d_scores, qkv, d);
  finite_difference_check(
      qkv, d_scores, d_qkv, [&](Tensor& o) { cpu.attention_scores_forward(o, qkv, d); }, scores,
      "grouped attention scores (Q, K)", grid);
  const Tensor d_context = random(DType::BF16, {d.seq, d.batch, d.heads * d.head_dim});
  Tensor context = zeros(DType::F32, {d.seq, d.batch, d.heads * d.head_dim});
  Tensor d_probs = zeros(DType::F32, {d.batch, d.heads, d.seq, d.seq});
  Tensor d_v = zeros(DType::F32, {d.seq, d.batch, d.qkv_width()});
  cpu.attention_context_backward(d_probs, d_v, d_context, probs, qkv, d);
  const auto context_forward = [&](Tensor& o) { cpu.attention_context_forward(o, probs, qkv, d); };
  finite_difference_check(probs, d_context, d_probs, context_forward, context, "grouped attention context (probs)",
                          grid);
  finite_difference_check(qkv, d_context, d_v, context_forward, context, "grouped attention context (V)", grid);
}

// sum(context * d_context) of causal grouped-query attention in double precision: the function both attention
// paths differentiate.
double reference_objective(const std::vector<double>& qkv, const std::vector<double>& d_context, const AttentionDims& d)
{
  const int64_t w = d.qkv_width(), dh = d.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  double total = 0;
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.heads; ++h) {
      const int64_t g = d.group_of(h);
      const int64_t q0 = h * dh, k0 = d.heads * dh + g * dh, v0 = (d.heads + d.groups()) * dh + g * dh;
      for (int64_t i = 0; i < d.seq; ++i) {
        std::vector<double> s(static_cast<size_t>(i + 1));
        double max = -1e300;
        for (int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < dh; ++c)
            dot += qkv[static_cast<size_t>((i * d.batch + b) * w + q0 + c)] *
                   qkv[static_cast<size_t>((j * d.batch + b) * w + k0 + c)];
          s[static_cast<size_t>(j)] = dot * scale;
          max = std::max(max, dot * scale);
        }
        double sum = 0;
        for (double& e : s)
          sum += (e = std::exp(e - max));
        for (int64_t c = 0; c < dh; ++c) {
          double out = 0;
          for (int64_t j = 0; j <= i; ++j)
            out += s[static_cast<size_t>(j)] / sum * qkv[static_cast<size_t>((j * d.batch + b) * w + v0 + c)];
          total += out * d_context[static_cast<size_t>((i * d.batch + b) * d.heads * dh + h * dh + c)];
        }
      }
    }
  return total;
}

// Both attention paths end to end (unfused: scores, softmax, context and their backwards; flash: the fused pair)
// against central differences of the double-precision reference over every element of Q, K and V. The kernels
// round the probabilities to bf16 on their way into P V, so they agree with the exact derivative to ~2e-3 of its
// largest element (measured: unfused 1.7e-3, flash 1.1e-3); a head reading the wrong group, or dK/dV not summed
// over the group, is off by O(1).
TEST_F(LlamaKernels, GroupedQueryAttentionUnfusedAndFlashMatchFiniteDifferences)
{
  const AttentionDims d{2, 4, 11, 8, 2}; // 11 tokens: two flash tiles of 8, the second partial
  const std::vector<int64_t> qkv_shape{d.seq, d.batch, d.qkv_width()};
  const Tensor qkv = random(DType::BF16, qkv_shape, 0.7f);
  const Tensor d_context = random(DType::BF16, {d.seq, d.batch, d.heads * d.head_dim});
  std::vector<double> x(static_cast<size_t>(qkv.numel())), g(static_cast<size_t>(d_context.numel()));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = load_float(qkv, static_cast<int64_t>(i));
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = load_float(d_context, static_cast<int64_t>(i));
  std::vector<double> numeric(x.size());
  const double step = 1e-4;
  for (size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + step;
    const double up = reference_objective(x, g, d);
    x[i] = saved - step;
    const double down = reference_objective(x, g, d);
    x[i] = saved;
    numeric[i] = (up - down) / (2 * step);
  }

  const int64_t n_scores = d.batch * d.heads * d.seq * d.seq;
  Tensor scores = zeros(DType::F32, {n_scores}), probs = zeros(DType::BF16, {n_scores});
  Tensor context = zeros(DType::BF16, {d.seq, d.batch, d.heads * d.head_dim});
  cpu.attention_scores_forward(scores, qkv, d);
  cpu.causal_softmax_forward(probs, scores, d.batch * d.heads * d.seq, d.seq);
  cpu.attention_context_forward(context, probs, qkv, d);
  Tensor unfused = zeros(DType::F32, qkv_shape), d_probs = zeros(DType::F32, {n_scores});
  cpu.attention_context_backward(d_probs, unfused, d_context, probs, qkv, d);
  cpu.causal_softmax_backward(d_probs, d_probs, probs, d.batch * d.heads * d.seq, d.seq);
  cpu.attention_scores_backward(unfused, d_probs, qkv, d);

  DropoutSite none; // p = 0: every probability kept
  none.local_dims = {d.batch, d.heads, d.seq, d.seq};
  none.global_dims = none.local_dims;
  Tensor flash_context = zeros(DType::BF16, {d.seq, d.batch, d.heads * d.head_dim});
  Tensor lse = zeros(DType::F32, {d.batch, d.heads, d.seq}), rng_state = zeros(DType::I32, {4});
  cpu.flash_attention_forward(flash_context, lse, rng_state, qkv, d, none);
  Tensor flash = zeros(DType::F32, qkv_shape);
  cpu.flash_attention_backward(flash, d_context, flash_context, lse, rng_state, qkv, d, none);

  for (const auto& [name, grad] : {std::pair<const char*, const Tensor*>{"unfused", &unfused}, {"flash", &flash}}) {
    double worst = 0, scale = 0;
    for (size_t i = 0; i < numeric.size(); ++i) {
      worst = std::max(worst, std::abs(numeric[i] - grad->f32()[i]));
      scale = std::max(scale, std::abs(numeric[i]));
    }
    EXPECT_LT(worst, 1e-2 * scale) << name << " grouped-query attention: worst " << worst << " of " << scale;
    std::printf("  %s GQA attention vs finite differences: worst %.2e of max derivative %.2e\n", name, worst, scale);
  }
}

} // namespace
} // namespace gputwin::engine
