// The fused attention core on the CPU (`--attention flash`): FlashAttention-2's tiled algorithm (Dao 2023,
// Algorithms 1 and 2) over query x key tiles of fused_attention_tile_tokens(), causal tiles only. Forward keeps
// a running row maximum m, row sum l and unnormalised output per query tile, rescaled as each key tile
// arrives, and stores only O and LSE = m + log l; backward rebuilds each tile's probabilities P = exp(S - LSE)
// from Q, K and the LSE, key tiles outermost as FlashAttention-2 does. Dropout is redrawn from the counter RNG
// at each (sample, head, query, key) position of the logical (B, a, s, s) tensor, so the kept elements are those
// of the unfused path's mask. Products read bf16 operands and sum in fp32 like the unfused kernels: the scores
// are bit-identical to theirs; the probabilities enter P V (and dV) rounded to bf16 unnormalised, as the
// tensor cores take them in FlashAttention-2, where the unfused path rounds the normalised softmax and then
// its dropout output, so flash and unfused agree to bf16 rounding, not bit for bit.
#include "cpu_attention_layout.hpp"
#include "gputwin/engine/backend/counter_rng.hpp"
#include "gputwin/engine/backend/cpu_backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

namespace gputwin::engine {

namespace {

// What forward hands backward besides Q, K, V, O and the LSE (FlashAttention's (seed, offset)): the dropout
// key and the logical position of element (0, 0, 0, 0) of this rank's (batch, heads, seq, seq) block.
struct RngState {
  uint64_t key = 0;
  uint64_t first_position = 0;
};
static_assert(sizeof(RngState) == 16, "FlashAttention's rng_state is two 64-bit words");

void check(const char* kernel, const Tensor& qkv, const Tensor& context, const Tensor& lse, const Tensor& rng_state,
           const AttentionDims& d)
{
  cpu::require_elements(kernel, qkv, d.seq * d.batch * d.qkv_width());
  cpu::require_elements(kernel, context, d.seq * d.batch * d.heads * d.head_dim);
  cpu::require_elements(kernel, lse, d.batch * d.heads * d.seq);
  if (lse.dtype() != DType::F32)
    throw std::logic_error(std::string(kernel) + ": the log-sum-exp must be f32, got " + lse.describe());
  if (rng_state.bytes() < static_cast<int64_t>(sizeof(RngState)))
    throw std::logic_error(std::string(kernel) + ": rng_state " + rng_state.describe() + " is under 16 bytes");
}

// The probabilities' dropout inside one (sample, head) block: whether element (query i, key j) is kept.
struct BlockDropout {
  uint64_t key = 0;
  uint64_t first = 0; // logical position of (i, j) = (0, 0)
  int64_t seq = 0;
  float probability = 0;
  float keep_scale = 1;

  bool keep(int64_t i, int64_t j) const
  {
    return counter_uniform(key, first + static_cast<uint64_t>(i * seq + j)) >= probability;
  }
};

BlockDropout block_dropout(const RngState& state, const DropoutSite& site, const AttentionDims& d, int64_t sample,
                           int64_t head)
{
  const auto& g = site.global_dims;
  if (g[2] != d.seq || g[3] != d.seq)
    throw std::logic_error("flash attention: dropout site is not (B, a, s, s) with s = " + std::to_string(d.seq));
  BlockDropout b;
  b.key = state.key;
  b.first = state.first_position + static_cast<uint64_t>((sample * g[1] + head) * d.seq * d.seq);
  b.seq = d.seq;
  b.probability = site.probability;
  b.keep_scale = 1.0f / (1.0f - site.probability);
  return b;
}

float dot(const float* a, const float* b, int64_t n)
{
  float sum = 0;
  for (int64_t c = 0; c < n; ++c)
    sum += a[c] * b[c];
  return sum;
}

// y += alpha x over n elements.
void axpy(float* y, float alpha, const float* x, int64_t n)
{
  for (int64_t c = 0; c < n; ++c)
    y[c] += alpha * x[c];
}

int64_t lse_index(const AttentionDims& d, int64_t sample, int64_t head, int64_t i)
{
  return (sample * d.heads + head) * d.seq + i;
}

} // namespace

void CpuBackend::flash_attention_forward(Tensor& context, Tensor& lse, Tensor& rng_state, const Tensor& qkv,
                                         const AttentionDims& d, const DropoutSite& dropout)
{
  check("flash_attention_forward", qkv, context, lse, rng_state, d);
  const auto& o = dropout.offsets;
  const auto& g = dropout.global_dims;
  if (o[2] != 0 || o[3] != 0)
    throw std::logic_error("flash_attention_forward: a rank holds whole (s, s) blocks of the probabilities");
  const RngState state{dropout.key, static_cast<uint64_t>((o[0] * g[1] + o[1]) * g[2] * g[3])};
  std::memcpy(rng_state.raw(), &state, sizeof state);

  const int64_t tile = fused_attention_tile_tokens(), dh = d.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  const size_t block = static_cast<size_t>(d.seq * dh);
  std::vector<float> q(block), k(block), v(block), acc(static_cast<size_t>(tile * dh)), scores(static_cast<size_t>(tile));
  std::vector<float> row_max(static_cast<size_t>(tile)), row_sum(static_cast<size_t>(tile));
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.heads; ++h) {
      cpu::gather_head(qkv, d, b, h, 0, q.data());
      cpu::gather_head(qkv, d, b, d.group_of(h), 1, k.data());
      cpu::gather_head(qkv, d, b, d.group_of(h), 2, v.data());
      const BlockDropout drop = block_dropout(state, dropout, d, b, h);
      for (int64_t i0 = 0; i0 < d.seq; i0 += tile) { // one query tile: a thread block of the GPU kernel
        const int64_t i1 = std::min(i0 + tile, d.seq);
        std::fill(row_max.begin(), row_max.end(), -std::numeric_limits<float>::infinity());
        std::fill(row_sum.begin(), row_sum.end(), 0.0f);
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t j0 = 0; j0 < i1; j0 += tile) { // key tiles wholly above the diagonal are skipped
          const int64_t j1 = std::min(j0 + tile, d.seq);
          for (int64_t i = i0; i < i1; ++i) {
            const int64_t r = i - i0, j_end = std::min(j1, i + 1); // causal: keys j <= i
            if (j_end <= j0)
              continue;
            float tile_max = -std::numeric_limits<float>::infinity();
            for (int64_t j = j0; j < j_end; ++j) {
              scores[static_cast<size_t>(j - j0)] = dot(q.data() + i * dh, k.data() + j * dh, dh) * scale;
              tile_max = std::max(tile_max, scores[static_cast<size_t>(j - j0)]);
            }
            const float new_max = std::max(row_max[static_cast<size_t>(r)], tile_max);
            const float rescale = std::exp(row_max[static_cast<size_t>(r)] - new_max); // 0 for the first tile
            float* out = acc.data() + r * dh;
            for (int64_t c = 0; c < dh; ++c)
              out[c] *= rescale;
            float sum = row_sum[static_cast<size_t>(r)] * rescale;
            for (int64_t j = j0; j < j_end; ++j) {
              const float p = std::exp(scores[static_cast<size_t>(j - j0)] - new_max);
              sum += p; // the softmax normalises over the undropped probabilities
              if (drop.keep(i, j))
                axpy(out, round_to_bf16(p * drop.keep_scale), v.data() + j * dh, dh);
            }
            row_sum[static_cast<size_t>(r)] = sum;
            row_max[static_cast<size_t>(r)] = new_max;
          }
        }
        for (int64_t i = i0; i < i1; ++i) {
          const int64_t r = i - i0;
          float* out = acc.data() + r * dh;
          const float inv = 1.0f / row_sum[static_cast<size_t>(r)];
          for (int64_t c = 0; c < dh; ++c)
            out[c] *= inv;
          cpu::store_row(context, cpu::context_index(d, i, b, h), dh, out);
          lse.f32()[lse_index(d, b, h, i)] =
              row_max[static_cast<size_t>(r)] + std::log(row_sum[static_cast<size_t>(r)]);
        }
      }
    }
}

void CpuBackend::flash_attention_backward(Tensor& d_qkv, const Tensor& d_context, const Tensor& context,
                                          const Tensor& lse, const Tensor& rng_state, const Tensor& qkv,
                                          const AttentionDims& d, const DropoutSite& dropout)
{
  check("flash_attention_backward", qkv, context, lse, rng_state, d);
  cpu::require_elements("flash_attention_backward d_context", d_context, d.seq * d.batch * d.heads * d.head_dim);
  cpu::require_elements("flash_attention_backward d_qkv", d_qkv, d.seq * d.batch * d.qkv_width());
  RngState state;
  std::memcpy(&state, rng_state.raw(), sizeof state);

  const int64_t tile = fused_attention_tile_tokens(), dh = d.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(dh));
  const size_t block = static_cast<size_t>(d.seq * dh);
  std::vector<float> q(block), k(block), v(block), out(block), d_out(block), dq(block), dk(block), dv(block);
  std::vector<float> row_dot(static_cast<size_t>(d.seq));
  // dK and dV of a group collect the gradients of its query heads in head order (FlashAttention-2 with GQA sums
  // them over the group the same way).
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t g = 0; g < d.groups(); ++g) {
      cpu::gather_head(qkv, d, b, g, 1, k.data());
      cpu::gather_head(qkv, d, b, g, 2, v.data());
      std::fill(dk.begin(), dk.end(), 0.0f);
      std::fill(dv.begin(), dv.end(), 0.0f);
      for (int64_t h = g * d.heads_per_group(); h < (g + 1) * d.heads_per_group(); ++h) {
        cpu::gather_head(qkv, d, b, h, 0, q.data());
        for (int64_t i = 0; i < d.seq; ++i) {
          cpu::load_row(context, cpu::context_index(d, i, b, h), dh, out.data() + i * dh);
          cpu::load_operand_row(d_context, cpu::context_index(d, i, b, h), dh, d_out.data() + i * dh);
          // D_i = rowsum(dO o O) = sum_j P_ij dP_ij (FlashAttention-2's preprocessing kernel).
          row_dot[static_cast<size_t>(i)] = dot(d_out.data() + i * dh, out.data() + i * dh, dh);
        }
        const BlockDropout drop = block_dropout(state, dropout, d, b, h);
        std::fill(dq.begin(), dq.end(), 0.0f);
        for (int64_t j0 = 0; j0 < d.seq; j0 += tile) {   // one key tile: a thread block of the GPU kernel
          const int64_t j1 = std::min(j0 + tile, d.seq);
          for (int64_t i0 = j0; i0 < d.seq; i0 += tile) { // query tiles on or below the diagonal
            const int64_t i1 = std::min(i0 + tile, d.seq);
            for (int64_t i = i0; i < i1; ++i) {
              const float row_lse = lse.f32()[lse_index(d, b, h, i)];
              const float* qi = q.data() + i * dh;
              const float* gi = d_out.data() + i * dh;
              for (int64_t j = j0; j < std::min(j1, i + 1); ++j) {
                const float p = std::exp(dot(qi, k.data() + j * dh, dh) * scale - row_lse);
                const bool keep = drop.keep(i, j);
                if (keep)
                  axpy(dv.data() + j * dh, round_to_bf16(p * drop.keep_scale), gi, dh);
                const float d_dropped = keep ? dot(gi, v.data() + j * dh, dh) * drop.keep_scale : 0.0f;
                const float d_score = round_to_bf16(p * (d_dropped - row_dot[static_cast<size_t>(i)])) * scale;
                axpy(dq.data() + i * dh, d_score, k.data() + j * dh, dh);
                axpy(dk.data() + j * dh, d_score, qi, dh);
              }
            }
          }
        }
        cpu::scatter_head(d_qkv, d, b, h, 0, dq.data());
      }
      cpu::scatter_head(d_qkv, d, b, g, 1, dk.data());
      cpu::scatter_head(d_qkv, d, b, g, 2, dv.data());
    }
}

} // namespace gputwin::engine
