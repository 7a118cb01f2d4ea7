// The CPU fused attention kernels (`--attention flash`) against the unfused kernels on the same inputs: the
// same causal softmax, the same dropout mask (drawn at the same logical positions of a sharded block), the
// same gradients, to bf16 rounding; and the stored log-sum-exp against a double-precision one.
#include "gputwin/engine/backend/counter_rng.hpp"
#include "gputwin/engine/backend/cpu_backend.hpp"
#include "kernel_test_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

namespace gputwin::engine {
namespace {

// The shared kernel fixture, seeded as these tests always were.
class FlashKernels : public testing::KernelTest {
protected:
  FlashKernels() : KernelTest(7) {}
};

double relative_l2(const Tensor& a, const Tensor& b, int64_t n)
{
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = load_float(a, i), y = load_float(b, i);
    diff += (x - y) * (x - y);
    norm += y * y;
  }
  return std::sqrt(diff / norm);
}

TEST_F(FlashKernels, MatchUnfusedKernelsWithDropoutOnAShardedBlock)
{
  // 21 tokens: three 8-token tiles, the last one partial. This rank holds samples 1..2 of 4 and heads 3..5 of 6.
  const AttentionDims d{2, 3, 21, 8};
  const int64_t scores = d.batch * d.heads * d.seq * d.seq, width = d.heads * d.head_dim;
  DropoutSite site;
  site.key = dropout_key(5, 2, 1, DropoutSiteKind::AttentionProbs);
  site.probability = 0.2f;
  site.local_dims = {d.batch, d.heads, d.seq, d.seq};
  site.offsets = {1, 3, 0, 0};
  site.global_dims = {4, 6, d.seq, d.seq};
  const Tensor qkv = random(DType::BF16, {d.seq, d.batch, 3 * width});
  const Tensor d_context = random(DType::F32, {d.seq, d.batch, width});

  // Unfused: the kernels the engine runs with --attention unfused.
  Tensor s = zeros(DType::F32, {scores}), probs = zeros(DType::BF16, {scores}), mask = zeros(DType::U8, {scores});
  Tensor dropped = zeros(DType::BF16, {scores}), context = zeros(DType::BF16, {d.seq, d.batch, width});
  cpu.attention_scores_forward(s, qkv, d);
  cpu.causal_softmax_forward(probs, s, d.batch * d.heads * d.seq, d.seq);
  cpu.dropout_forward(dropped, mask, probs, site);
  cpu.attention_context_forward(context, dropped, qkv, d);
  Tensor d_probs = zeros(DType::F32, {scores}), d_qkv = zeros(DType::F32, {d.seq, d.batch, 3 * width});
  cpu.attention_context_backward(d_probs, d_qkv, d_context, dropped, qkv, d);
  cpu.dropout_backward(d_probs, d_probs, mask, site.probability);
  cpu.causal_softmax_backward(d_probs, d_probs, probs, d.batch * d.heads * d.seq, d.seq);
  cpu.attention_scores_backward(d_qkv, d_probs, qkv, d);

  // Fused.
  Tensor flash_context = zeros(DType::BF16, {d.seq, d.batch, width}), lse = zeros(DType::F32, {d.batch, d.heads, d.seq});
  Tensor rng_state = zeros(DType::I32, {4}), flash_d_qkv = zeros(DType::F32, {d.seq, d.batch, 3 * width});
  cpu.flash_attention_forward(flash_context, lse, rng_state, qkv, d, site);
  cpu.flash_attention_backward(flash_d_qkv, d_context, flash_context, lse, rng_state, qkv, d, site);

  // Measured: context 3.2e-3, d_qkv 3.1e-3 (each stored context element is rounded to bf16 from a slightly
  // different fp32 value, the probabilities are rounded in other places; the bf16 ulp is 2^-8); a wrong
  // mask position or a missing rescale gives errors above 1e-1.
  const double context_error = relative_l2(flash_context, context, d.seq * d.batch * width);
  const double gradient_error = relative_l2(flash_d_qkv, d_qkv, d.seq * d.batch * 3 * width);
  std::printf("  flash vs unfused kernels: context %.2e, d_qkv %.2e (relative L2)\n", context_error, gradient_error);
  EXPECT_LT(context_error, 5e-3);
  EXPECT_LT(gradient_error, 1e-2);
  // The log-sum-exp of each causal score row.
  for (int64_t row = 0; row < d.batch * d.heads * d.seq; ++row) {
    const int64_t i = row % d.seq;
    double sum = 0;
    for (int64_t j = 0; j <= i; ++j)
      sum += std::exp(static_cast<double>(s.f32()[row * d.seq + j]));
    EXPECT_NEAR(lse.f32()[row], std::log(sum), 1e-5) << "row " << row;
  }
  // Without dropout the two agree as closely (no mask to get wrong, still bf16 operands).
  site.probability = 0.0f;
  cpu.dropout_forward(dropped, mask, probs, site);
  cpu.attention_context_forward(context, dropped, qkv, d);
  cpu.flash_attention_forward(flash_context, lse, rng_state, qkv, d, site);
  EXPECT_LT(relative_l2(flash_context, context, d.seq * d.batch * width), 5e-3);
}

TEST_F(FlashKernels, RngStateIsTheKeyAndTheBlocksFirstPosition)
{
  const AttentionDims d{1, 2, 8, 4};
  DropoutSite site;
  site.key = 0x1234567890abcdefull;
  site.probability = 0.1f;
  site.offsets = {3, 2, 0, 0};
  site.global_dims = {4, 4, 8, 8};
  Tensor context = zeros(DType::BF16, {8, 1, 8}), lse = zeros(DType::F32, {1, 2, 8}), state = zeros(DType::I32, {4});
  cpu.flash_attention_forward(context, lse, state, random(DType::BF16, {8, 1, 24}), d, site);
  uint64_t words[2];
  std::memcpy(words, state.raw(), sizeof words);
  EXPECT_EQ(words[0], site.key);
  EXPECT_EQ(words[1], static_cast<uint64_t>((3 * 4 + 2) * 8 * 8)); // element (3, 2, 0, 0) of (4, 4, 8, 8)
}

} // namespace
} // namespace gputwin::engine
