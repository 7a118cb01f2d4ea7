// The fused-attention throughput curves (attention_throughput.hpp) against the figures they come from:
// FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608) Figures 5 and 6, the cuDNN bars on H100 SXM5, BF16.
// Every grid point is reproduced for head dims 64 and 128, between them the curve lies between its neighbours,
// and a fused forward of head dim 64 takes the paper's longer time per FLOP in the GPU compute model.
#include "gputwin/models/attention_throughput.hpp"
#include "gputwin/models/gpu_compute_model.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace gputwin {
namespace {

constexpr double h100_peak = 989e12;
const std::vector<double> lengths = {512, 1024, 2048, 4096, 8192, 16384};

// Figure 5 (causal forward) and Figure 6 (backward without mask), with Figure 5's non-causal forward for the
// causal backward's skipped tiles: backward_causal = backward x causal_forward / dense_forward.
struct PaperBars {
  double head_dim;
  std::vector<double> causal_forward, dense_forward, dense_backward;
};
const PaperBars d64{64, {225, 288, 334, 363, 379, 388}, {335, 373, 395, 408, 412, 413}, {266, 348, 395, 417, 432, 433}};
const PaperBars d128{128, {315, 410, 484, 518, 529, 539}, {497, 574, 617, 609, 600, 595}, {305, 408, 465, 499, 518, 516}};

TEST(AttentionThroughput, ReproducesThePapersCudnnBarsAtHeadDims64And128)
{
  const AttentionThroughput* curve = builtin_attention_throughput("h100-cudnn");
  ASSERT_NE(curve, nullptr);
  for (const PaperBars& bars : {d64, d128})
    for (size_t i = 0; i < lengths.size(); ++i) {
      const double backward = bars.dense_backward[i] * bars.causal_forward[i] / bars.dense_forward[i];
      EXPECT_NEAR(curve->flops_per_s(lengths[i], bars.head_dim, true, h100_peak) / 1e12, bars.causal_forward[i],
                  1e-9)
          << "forward, head dim " << bars.head_dim << ", seq " << lengths[i];
      EXPECT_NEAR(curve->flops_per_s(lengths[i], bars.head_dim, false, h100_peak) / 1e12, backward, 1e-9)
          << "backward, head dim " << bars.head_dim << ", seq " << lengths[i];
    }
}

TEST(AttentionThroughput, BetweenHeadDimsInLog2AndClampedOutside)
{
  const AttentionThroughput& curve = *builtin_attention_throughput("h100-cudnn");
  for (bool forward : {true, false}) {
    const double at64 = curve.flops_per_s(4096, 64, forward, h100_peak);
    const double at128 = curve.flops_per_s(4096, 128, forward, h100_peak);
    // d 90.5 = 2^6.5: half way in log2 between the two curves.
    EXPECT_NEAR(curve.flops_per_s(4096, 90.50966799187809, forward, h100_peak), (at64 + at128) / 2, 1e-3 * at128);
    EXPECT_EQ(curve.flops_per_s(4096, 32, forward, h100_peak), at64);   // below the smallest curve: its value
    EXPECT_EQ(curve.flops_per_s(4096, 512, forward, h100_peak), curve.flops_per_s(4096, 256, forward, h100_peak));
  }
  // Head dim 256's forward is Figure 5's (483 TFLOP/s causal at 4k); a GPU of twice the peak runs twice as fast.
  EXPECT_NEAR(curve.flops_per_s(4096, 256, true, h100_peak) / 1e12, 483, 1e-9);
  EXPECT_NEAR(curve.flops_per_s(4096, 64, true, 2 * h100_peak), 2 * curve.flops_per_s(4096, 64, true, h100_peak),
              1e-3);
  // Fewer keys than the first bar: in proportion to the keys.
  EXPECT_NEAR(curve.flops_per_s(256, 64, true, h100_peak) / 1e12, 225.0 / 2, 1e-9);
  EXPECT_THROW(curve.flops_per_s(4096, 0, true, h100_peak), std::invalid_argument);
}

// The GPU compute model times a fused forward by the curve of its head dim: at seq 4096 a head-dim-64 op takes
// 518 / 363 of the time per benchmark FLOP that a head-dim-128 op takes (both bound by the curve, not by GEMMs).
TEST(AttentionThroughput, FusedForwardOfSmallHeadsTakesLongerPerFlop)
{
  const GpuComputeModel gpu = builtin_compute_model(GpuGeneration::Hopper, "h100-sxm5-80gb", h100_peak, 3.35e12);
  auto flash_forward_s = [&](int64_t head_dim) {
    traces::Op op;
    op.kind = traces::OpKind::Compute;
    op.name = "attn.flash.fwd";
    const int64_t seq = 4096, batch_heads = 64;
    op.gemm = traces::GemmShape{seq, head_dim, seq, batch_heads};
    op.flops = causal_benchmark_flops(seq, static_cast<double>(head_dim), seq, batch_heads, true);
    op.bytes = 4.0 * seq * static_cast<double>(head_dim * batch_heads) * 2;
    return compute_duration_s(gpu, op) / op.flops;
  };
  EXPECT_NEAR(flash_forward_s(64) / flash_forward_s(128), 518.0 / 363.0, 0.03);
}

} // namespace
} // namespace gputwin
