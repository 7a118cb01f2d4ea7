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
                                                int64_t tile_tokens)
{
  const double sd = static_cast<double>(seq * head_dim), s = static_cast<double>(seq);
  FusedAttentionCost c;
  c.flops = 2.0 * causal_product_flops(batch_heads, seq, head_dim, tile_tokens); // Q K^T, P V
  c.bytes = static_cast<double>(batch_heads) * (3 * 2 * sd + 2 * sd + 4 * s);     // Q, K, V in; O, LSE out
  c.shape = traces::GemmShape{seq, head_dim, seq, batch_heads};
  return c;
}

FusedAttentionCost flash_attention_backward_cost(int64_t batch_heads, int64_t seq, int64_t head_dim,
                                                 int64_t tile_tokens)
{
  const double sd = static_cast<double>(seq * head_dim), s = static_cast<double>(seq);
  FusedAttentionCost c;
  // Recomputed Q K^T, dV, dP, dQ, dK.
  c.flops = 5.0 * causal_product_flops(batch_heads, seq, head_dim, tile_tokens);
  const double preprocessing = 2 * 2 * sd + 4 * s;                       // O, dO in; D out
  const double main_kernel = 4 * 2 * sd + 2 * 4 * s + 2 * 2 * sd + 4 * sd; // Q K V dO, LSE D in; dK dV, dQ acc out
  const double conversion = 4 * sd + 2 * sd;                             // dQ accumulator in, dQ out
  c.bytes = static_cast<double>(batch_heads) * (preprocessing + main_kernel + conversion);
  c.shape = traces::GemmShape{seq, head_dim, seq, batch_heads};
  return c;
}

} // namespace gputwin
