#pragma once
// Measured throughput of fused (flash) attention kernels over sequence length, the curve `compute_duration_s`
// times `attn.flash.fwd` / `attn.flash.bwd` by instead of the GEMM table (whose best shapes run at ~80% of
// peak; fused attention does not: softmax, masking and the online rescaling sit between its two products).
//
//   t = max(GEMM-model time, F / (throughput(seq) x peak / reference_peak))
//
// F is the FLOP count of the benchmark convention the curve was measured in: causal attention counts half the
// dense s^2 products (FlashAttention-3 paper, Section 4.1: "for causal mask, we divide the FLOPs by 2"),
// forward 2 products, backward 5 (2.5 x forward), i.e. F = 0.5 x products x 2 m n k batch of the op's timing
// shape (flash_attention_cost.hpp), and seq = the op's key length k (a context-parallel step's block).
// Between grid points the throughput is interpolated linearly in log2(seq); above the last point it stays at
// the last value (the curves have flattened by 16k); below the first it falls in proportion to seq (fewer
// tiles per (sample, head) than SMs fill).
//
// The curves are per head dim d (the timing shape's n; MLA's mean of its query-key and value widths): at d
// between two curves the throughput is interpolated linearly in log2(d), outside them it is the nearest
// curve's. Small heads run slower (less work per loaded tile between the two products' softmax steps).
//
// Built-in: "h100-cudnn", cuDNN's fused attention (Transformer Engine's FusedAttention backend, what
// Megatron-Core / NeMo run on Hopper), BF16, batch x seq = 16k tokens, H100 SXM5 80GB, from FlashAttention-3
// (Shah et al. 2024, arXiv:2407.08608), the cuDNN bars at 512 ... 16k:
//   d 64:  causal forward 225, 288, 334, 363, 379, 388 TFLOP/s (Figure 5); non-causal 335, 373, 395, 408, 412,
//          413; backward without mask 266, 348, 395, 417, 432, 433 (Figure 6)
//   d 128: causal forward 315, 410, 484, 518, 529, 539; non-causal 497, 574, 617, 609, 600, 595; backward
//          305, 408, 465, 499, 518, 516
//   d 256: causal forward 308, 391, 450, 483, 497, 509; non-causal 470, 546, 580, 581, 580, 581; no backward
//          bars at 256 in the paper: d 128's backward times the causal forward's 256 / 128 ratio (assumed)
// The causal backward is the non-causal one times the forward's causal / non-causal ratio at the same length,
// since the causal backward skips the same tiles.

#include <string>
#include <vector>

namespace gputwin {

struct AttentionThroughput {
  std::string name;                     // "h100-cudnn"
  double reference_peak_flops = 0;      // the dense bf16 peak of the GPU it was measured on
  std::vector<double> seq;              // increasing sequence lengths (keys), tokens
  struct HeadDimCurve {
    double head_dim = 0;                  // per-head width the curve was measured at
    std::vector<double> forward_flops_s;  // measured FLOP/s of the causal forward at each length of `seq`
    std::vector<double> backward_flops_s; // ... of the causal backward
    bool operator==(const HeadDimCurve&) const = default;
  };
  std::vector<HeadDimCurve> head_dims; // increasing head dims

  bool empty() const { return seq.empty() || head_dims.empty(); }
  // FLOP/s at `keys` and `head_dim` on a GPU of `peak_flops` (scaled by peak / reference peak).
  // REQUIRES !empty(), keys > 0, head_dim > 0.
  double flops_per_s(double keys, double head_dim, bool forward, double peak_flops) const;
  bool operator==(const AttentionThroughput&) const = default;
};

// The built-in curve of that name; nullptr for an unknown one.
const AttentionThroughput* builtin_attention_throughput(const std::string& name);

// The benchmark-convention FLOPs of a fused attention op with timing shape (m, n, k, batch): 0.5 x 2 m n k batch
// x (2 forward, 5 backward).
double causal_benchmark_flops(double m, double n, double k, double batch, bool forward);

} // namespace gputwin
