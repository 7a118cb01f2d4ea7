#include "gputwin/models/flash_attention_cost.hpp"

#include <stdexcept>

namespace gputwin {

double causal_tile_fraction(int64_t seq, int64_t tile_tokens)
{
  if (seq <= 0 || tile_tokens <= 0)
    throw std::invalid_argument("causal_tile_fraction: sequence and tile must be positive");
  const double blocks = static_cast<double>((seq + tile_tokens - 1) / tile_tokens);
  return blocks * (blocks + 1) / (2.0 * blocks * blocks);
}

namespace {

// Dense FLOPs of one s x s x d product over every (sample, head), times the causal tile fraction.
double causal_product_flops(int64_t batch_heads, int64_t seq, int64_t head_dim, int64_t tile_tokens)
{
  const double s = static_cast<double>(seq);
  return 2.0 * s * s * static_cast<double>(head_dim) * static_cast<double>(batch_heads) *
         causal_tile_fraction(seq, tile_tokens);
}

} // namespace

FusedAttentionCost flash_attention_forward_cost(int64_t batch_heads, int64_t seq, int64_t head_dim,
                                                int64_t tile_tokens, double kv_share)
{
  const double sd = static_cast<double>(seq * head_dim), s = static_cast<double>(seq);
  FusedAttentionCost c;
  c.flops = 2.0 * causal_product_flops(batch_heads, seq, head_dim, tile_tokens); // Q K^T, P V
  // Q in, K and V in (shared by the group), O and LSE out.
  c.bytes = static_cast<double>(batch_heads) * (2 * sd + kv_share * 2 * 2 * sd + 2 * sd + 4 * s);
  c.shape = traces::GemmShape{seq, head_dim, seq, batch_heads};
  return c;
}

FusedAttentionCost flash_attention_backward_cost(int64_t batch_heads, int64_t seq, int64_t head_dim,
                                                 int64_t tile_tokens, double kv_share)
{
  const double sd = static_cast<double>(seq * head_dim), s = static_cast<double>(seq);
  FusedAttentionCost c;
  // Recomputed Q K^T, dV, dP, dQ, dK.
  c.flops = 5.0 * causal_product_flops(batch_heads, seq, head_dim, tile_tokens);
  const double preprocessing = 2 * 2 * sd + 4 * s; // O, dO in; D out
  // Q, dO in, K V in (per group), LSE D in; dK dV out (per group), dQ accumulator out.
  const double main_kernel = 2 * 2 * sd + kv_share * 2 * 2 * sd + 2 * 4 * s + kv_share * 2 * 2 * sd + 4 * sd;
  const double conversion = 4 * sd + 2 * sd; // dQ accumulator in, dQ out
  c.bytes = static_cast<double>(batch_heads) * (preprocessing + main_kernel + conversion);
  c.shape = traces::GemmShape{seq, head_dim, seq, batch_heads};
  return c;
}

FusedAttentionCost flash_attention_cp_step_cost(int64_t batch_heads, int64_t seq_local, int64_t head_dim, int64_t cp,
                                                bool forward, double kv_share)
{
  const double bh = static_cast<double>(batch_heads), sl = static_cast<double>(seq_local),
               dh = static_cast<double>(head_dim), c = static_cast<double>(cp);
  const double full = sl * c;
  // The rank's causal score entries over the whole ring: full^2 / (2 cp); one step: that / cp.
  const double entries_per_step = full * full / (2.0 * c) / c;
  FusedAttentionCost block = forward ? flash_attention_forward_cost(batch_heads, seq_local, head_dim,
                                                                    flash_tile_tokens, kv_share)
                                     : flash_attention_backward_cost(batch_heads, seq_local, head_dim,
                                                                     flash_tile_tokens, kv_share);
  block.flops = (forward ? 2.0 : 5.0) * 2.0 * entries_per_step * dh * bh;
  block.bytes += bh * (2.0 * (4.0 * sl * dh + 4.0 * sl)); // fp32 running output (dQ) and LSE, read and written
  block.shape = traces::GemmShape{seq_local, head_dim, seq_local, batch_heads};
  return block;
}

} // namespace gputwin
