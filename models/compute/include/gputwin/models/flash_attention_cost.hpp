#pragma once
// FLOPs, HBM bytes and GEMM-like timing shape of the fused attention kernels (FlashAttention-2, Dao 2023) of
// one rank: one forward kernel and one backward kernel per layer and micro-batch, used by the workload
// generator (`attn.flash.fwd` / `attn.flash.bwd`) and by the engine's tracer, so both describe the same op.
//
// FLOPs count the tensor-core products only, as the FlashAttention papers do (the exponentials and row sums
// are O(s^2) scalar work, not counted): forward Q K^T and P V, 2 x 2 s^2 d per (sample, head); backward
// the recomputed S = Q K^T, then dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q, 5 x 2 s^2 d: 2.5 x forward.
// Causal masking (Megatron GPT): FlashAttention-2 skips the key tiles entirely above the diagonal and
// computes (and masks) the diagonal ones, so both kernels count the nb (nb + 1) / 2 tiles of nb^2
// (nb = ceil(s / tile)): 17/32 of the dense count at s = 2048 with 128-token tiles, not the dense s^2 that
// the unfused GEMMs (and the paper's model FLOPs) compute.
//
// HBM bytes: each tensor moved once (later query blocks' re-reads of K and V assumed served from L2); no
// s x s tensor ever reaches HBM and the dropout mask is drawn in the kernel:
//   forward   read Q, K, V (3 x 2 s d), write O (2 s d) and the fp32 log-sum-exp (4 s)
//   backward  preprocessing: read O and dO (2 x 2 s d), write D = rowsum(dO o O) in fp32 (4 s); main kernel:
//             read Q, K, V, dO (4 x 2 s d), LSE and D (2 x 4 s), write dK, dV (2 x 2 s d) and the fp32 dQ
//             accumulator (4 s d); conversion: read it (4 s d), write dQ (2 s d)
// per (sample, head).
//
// Timing shape: the kernel's grid is one thread block per (query tile, sample x head) forward and per (key
// tile, sample x head) backward, each producing an s_tile x d block of O (or dK, dV) by reducing over the s
// keys (queries): the GEMM m = s, n = d, k = s, batch = b a / t, whose output tiles match that grid, so the
// GPU compute model's wave quantization sees the real thread blocks and its short-k penalty the long
// reduction over the sequence (not the short head dimension d of Q K^T alone).

#include "gputwin/traces/op_graph.hpp"

#include <cstdint>

namespace gputwin {

// Query/key tile edge of the GPU kernels, tokens: FlashAttention-2's forward block for head dimensions 64-128
// on A100/H100 (Dao 2023, Section 3.3: 128 x 64 or 128 x 128 blocks; 128 taken for both).
inline constexpr int64_t flash_tile_tokens = 128;

// Fraction of the s x s score tiles a causal kernel computes with `tile_tokens`-token tiles: nb (nb + 1) /
// (2 nb^2), nb = ceil(seq / tile_tokens). REQUIRES: seq, tile_tokens > 0.
double causal_tile_fraction(int64_t seq, int64_t tile_tokens);

struct FusedAttentionCost {
  double flops = 0;        // tensor-core FLOPs executed
  double bytes = 0;        // HBM bytes read and written
  traces::GemmShape shape; // the GEMM the compute model times it as (see above)
};

// One causal fused forward over `batch_heads` (sample, head) pairs of `seq` tokens and `head_dim`. With
// grouped-query attention K and V (and dK, dV) are read and written once per group: `kv_share` = g / a scales
// their bytes.
FusedAttentionCost flash_attention_forward_cost(int64_t batch_heads, int64_t seq, int64_t head_dim,
                                                int64_t tile_tokens = flash_tile_tokens, double kv_share = 1.0);
// Its backward, with the internal recompute of Q K^T: 2.5 x the forward FLOPs.
FusedAttentionCost flash_attention_backward_cost(int64_t batch_heads, int64_t seq, int64_t head_dim,
                                                 int64_t tile_tokens = flash_tile_tokens, double kv_share = 1.0);

// One step of context-parallel ring attention (Megatron-Core / Transformer Engine, load-balanced: each rank holds
// chunks i and 2cp-1-i of the sequence split in 2cp, so every rank does 1/cp of the causal work, s_full^2 / (2 cp)
// score entries per (sample, head), in cp steps of equal work). A step attends the rank's `seq_local` queries to
// one K/V block of `seq_local` keys: FLOPs = the rank's causal FLOPs / cp (forward 2 products, backward 5);
// bytes = the fused kernel's on that block (flash_attention_*_cost at seq_local, not causal) plus the fp32
// correction of the running output and log-sum-exp (read and write 4 s d + 4 s per step forward; backward the
// dQ accumulator likewise). Timing shape: m = seq_local, n = head_dim, k = seq_local.
FusedAttentionCost flash_attention_cp_step_cost(int64_t batch_heads, int64_t seq_local, int64_t head_dim, int64_t cp,
                                                bool forward, double kv_share = 1.0);

} // namespace gputwin
