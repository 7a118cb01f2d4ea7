// The attention core on the CPU: scores Q K^T / sqrt(d), causal softmax, and attention over V, with their
// backward passes. Each (sample, head) pair is copied into contiguous fp32 (seq, head_dim) blocks first. The
// products' operands are read as bf16 (cpu::load_operand: an fp32 gradient is rounded) with fp32 sums, as the
// CUDA backend's tensor-core GEMMs compute them.
#include "cpu_attention_layout.hpp"
#include "gputwin/engine/backend/cpu_backend.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gputwin::engine {

namespace {

using cpu::gather_head;
using cpu::scatter_head;

int64_t score_row(const AttentionDims& d, int64_t sample, int64_t head, int64_t i)
{
  return ((sample * d.heads + head) * d.seq + i) * d.seq;
}

void check(const char* kernel, const Tensor& qkv, const Tensor& scores, const AttentionDims& d)
{
  cpu::require_elements(kernel, qkv, d.seq * d.batch * d.qkv_width());
  cpu::require_elements(kernel, scores, d.batch * d.heads * d.seq * d.seq);
}

} // namespace

void CpuBackend::attention_scores_forward(Tensor& scores, const Tensor& qkv, const AttentionDims& d)
{
  check("attention_scores_forward", qkv, scores, d);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.head_dim));
  std::vector<float> q(static_cast<size_t>(d.seq * d.head_dim)), k(q.size());
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.heads; ++h) {
      gather_head(qkv, d, b, h, 0, q.data());
      gather_head(qkv, d, b, d.group_of(h), 1, k.data());
      for (int64_t i = 0; i < d.seq; ++i) {
        const float* qi = q.data() + i * d.head_dim;
        const int64_t row = score_row(d, b, h, i);
        for (int64_t j = 0; j <= i; ++j) {
          const float* kj = k.data() + j * d.head_dim;
          float dot = 0;
          for (int64_t c = 0; c < d.head_dim; ++c)
            dot += qi[c] * kj[c];
          cpu::store(scores, row + j, dot * scale);
        }
      }
    }
}

void CpuBackend::attention_scores_backward(Tensor& d_qkv, const Tensor& d_scores, const Tensor& qkv,
                                           const AttentionDims& d)
{
  check("attention_scores_backward", qkv, d_scores, d);
  check("attention_scores_backward", d_qkv, d_scores, d);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d.head_dim));
  const size_t block = static_cast<size_t>(d.seq * d.head_dim);
  std::vector<float> q(block), k(block), dq(block), dk(block);
  // K of a group collects the gradients of its query heads in head order (one group lives on one rank, so every
  // tensor-parallel plan sums them in this order).
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t g = 0; g < d.groups(); ++g) {
      gather_head(qkv, d, b, g, 1, k.data());
      std::fill(dk.begin(), dk.end(), 0.0f);
      for (int64_t h = g * d.heads_per_group(); h < (g + 1) * d.heads_per_group(); ++h) {
        gather_head(qkv, d, b, h, 0, q.data());
        std::fill(dq.begin(), dq.end(), 0.0f);
        for (int64_t i = 0; i < d.seq; ++i) {
          const int64_t row = score_row(d, b, h, i);
          float* dqi = dq.data() + i * d.head_dim;
          const float* qi = q.data() + i * d.head_dim;
          for (int64_t j = 0; j <= i; ++j) {
            const float ds = cpu::load_operand(d_scores, row + j) * scale;
            const float* kj = k.data() + j * d.head_dim;
            float* dkj = dk.data() + j * d.head_dim;
            for (int64_t c = 0; c < d.head_dim; ++c) {
              dqi[c] += ds * kj[c];
              dkj[c] += ds * qi[c];
            }
          }
        }
        scatter_head(d_qkv, d, b, h, 0, dq.data());
      }
      scatter_head(d_qkv, d, b, g, 1, dk.data());
    }
}

void CpuBackend::causal_softmax_forward(Tensor& probs, const Tensor& scores, int64_t rows, int64_t seq)
{
  cpu::require_elements("causal_softmax_forward scores", scores, rows * seq);
  cpu::require_elements("causal_softmax_forward probs", probs, rows * seq);
  std::vector<float> e(static_cast<size_t>(seq));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r % seq, base = r * seq;
    float max = -INFINITY;
    for (int64_t j = 0; j <= i; ++j)
      max = std::max(max, cpu::load(scores, base + j));
    float sum = 0;
    for (int64_t j = 0; j <= i; ++j) {
      e[static_cast<size_t>(j)] = std::exp(cpu::load(scores, base + j) - max);
      sum += e[static_cast<size_t>(j)];
    }
    const float inv = 1.0f / sum;
    for (int64_t j = 0; j < seq; ++j)
      cpu::store(probs, base + j, j <= i ? e[static_cast<size_t>(j)] * inv : 0.0f);
  }
}

void CpuBackend::causal_softmax_backward(Tensor& d_scores, const Tensor& d_probs, const Tensor& probs, int64_t rows,
                                         int64_t seq)
{
  cpu::require_elements("causal_softmax_backward", probs, rows * seq);
  cpu::require_elements("causal_softmax_backward", d_probs, rows * seq);
  cpu::require_elements("causal_softmax_backward", d_scores, rows * seq);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r % seq, base = r * seq;
    float dot = 0;
    for (int64_t j = 0; j <= i; ++j)
      dot += cpu::load(probs, base + j) * cpu::load(d_probs, base + j);
    for (int64_t j = 0; j < seq; ++j)
      cpu::store(d_scores, base + j, j <= i ? cpu::load(probs, base + j) * (cpu::load(d_probs, base + j) - dot) : 0.0f);
  }
}

void CpuBackend::attention_context_forward(Tensor& context, const Tensor& probs, const Tensor& qkv,
                                           const AttentionDims& d)
{
  check("attention_context_forward", qkv, probs, d);
  cpu::require_elements("attention_context_forward context", context, d.seq * d.batch * d.heads * d.head_dim);
  const int64_t width = d.heads * d.head_dim;
  std::vector<float> v(static_cast<size_t>(d.seq * d.head_dim)), out(static_cast<size_t>(d.head_dim));
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t h = 0; h < d.heads; ++h) {
      gather_head(qkv, d, b, d.group_of(h), 2, v.data());
      for (int64_t i = 0; i < d.seq; ++i) {
        std::fill(out.begin(), out.end(), 0.0f);
        const int64_t row = score_row(d, b, h, i);
        for (int64_t j = 0; j <= i; ++j) {
          const float p = cpu::load_operand(probs, row + j);
          const float* vj = v.data() + j * d.head_dim;
          for (int64_t c = 0; c < d.head_dim; ++c)
            out[static_cast<size_t>(c)] += p * vj[c];
        }
        cpu::store_row(context, (i * d.batch + b) * width + h * d.head_dim, d.head_dim, out.data());
      }
    }
}

void CpuBackend::attention_context_backward(Tensor& d_probs, Tensor& d_qkv, const Tensor& d_context,
                                            const Tensor& probs, const Tensor& qkv, const AttentionDims& d)
{
  check("attention_context_backward", qkv, probs, d);
  check("attention_context_backward", d_qkv, d_probs, d);
  const int64_t width = d.heads * d.head_dim;
  const size_t block = static_cast<size_t>(d.seq * d.head_dim);
  std::vector<float> v(block), dctx(block), dv(block);
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t g = 0; g < d.groups(); ++g) {
      gather_head(qkv, d, b, g, 2, v.data());
      std::fill(dv.begin(), dv.end(), 0.0f); // V of a group: the sum over its query heads, in head order
      for (int64_t h = g * d.heads_per_group(); h < (g + 1) * d.heads_per_group(); ++h) {
        for (int64_t i = 0; i < d.seq; ++i)
          cpu::load_operand_row(d_context, (i * d.batch + b) * width + h * d.head_dim, d.head_dim,
                                dctx.data() + i * d.head_dim);
        for (int64_t i = 0; i < d.seq; ++i) {
          const int64_t row = score_row(d, b, h, i);
          const float* gi = dctx.data() + i * d.head_dim;
          for (int64_t j = 0; j < d.seq; ++j) {
            if (j > i) {
              cpu::store(d_probs, row + j, 0.0f);
              continue;
            }
            const float* vj = v.data() + j * d.head_dim;
            float* dvj = dv.data() + j * d.head_dim;
            const float p = cpu::load_operand(probs, row + j);
            float dot = 0;
            for (int64_t c = 0; c < d.head_dim; ++c) {
              dot += gi[c] * vj[c];
              dvj[c] += p * gi[c];
            }
            cpu::store(d_probs, row + j, dot);
          }
        }
      }
      scatter_head(d_qkv, d, b, g, 2, dv.data());
    }
}

} // namespace gputwin::engine
