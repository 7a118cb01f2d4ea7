// Mixture-of-experts kernels on the CPU: the softmax router's top-k and its backward, the permutation of the
// routed token copies into expert order and the weighted unpermutation back, each in a fixed order.
#include "cpu_access.hpp"
#include "gputwin/engine/backend/cpu_backend.hpp"

#include <cmath>
#include <vector>

namespace gputwin::engine {

void CpuBackend::router_topk_forward(Tensor& probs, Tensor& indices, Tensor& weights, const Tensor& logits,
                                     int64_t tokens, int64_t experts, int64_t topk)
{
  cpu::require_elements("router_topk_forward logits", logits, tokens * experts);
  cpu::require_elements("router_topk_forward probs", probs, tokens * experts);
  cpu::require_elements("router_topk_forward weights", weights, tokens * topk);
  const auto e = static_cast<size_t>(experts);
  std::vector<float> x(e), p(e);
  std::vector<bool> taken(e);
  for (int64_t t = 0; t < tokens; ++t) {
    cpu::load_row(logits, t * experts, experts, x.data());
    float max = x[0];
    for (size_t i = 1; i < e; ++i)
      max = std::max(max, x[i]);
    double sum = 0;
    for (size_t i = 0; i < e; ++i) {
      p[i] = std::exp(x[i] - max);
      sum += p[i];
    }
    for (size_t i = 0; i < e; ++i)
      p[i] = static_cast<float>(p[i] / sum);
    cpu::store_row(probs, t * experts, experts, p.data());
    std::fill(taken.begin(), taken.end(), false);
    double selected = 0;
    for (int64_t j = 0; j < topk; ++j) {
      size_t best = e;
      for (size_t i = 0; i < e; ++i)
        if (!taken[i] && (best == e || p[i] > p[best]))
          best = i;
      taken[best] = true;
      indices.i32()[t * topk + j] = static_cast<int32_t>(best);
      selected += p[best];
    }
    for (int64_t j = 0; j < topk; ++j)
      cpu::store(weights, t * topk + j,
                 static_cast<float>(p[static_cast<size_t>(indices.i32()[t * topk + j])] / selected));
  }
}

// w_j = p_j / S with S = sum_l p_l over the selected experts: dL/dp_j = (g_j - sum_l g_l w_l) / S for a selected
// expert (0 for the others); then the softmax: dL/dx_i = p_i (dL/dp_i - sum_m p_m dL/dp_m).
void CpuBackend::router_topk_backward(Tensor& d_logits, const Tensor& d_weights, const Tensor& probs,
                                      const Tensor& indices, const Tensor& weights, int64_t tokens, int64_t experts,
                                      int64_t topk)
{
  cpu::require_elements("router_topk_backward d_logits", d_logits, tokens * experts);
  const auto e = static_cast<size_t>(experts);
  std::vector<float> p(e), dp(e), dx(e);
  for (int64_t t = 0; t < tokens; ++t) {
    cpu::load_row(probs, t * experts, experts, p.data());
    std::fill(dp.begin(), dp.end(), 0.0f);
    double selected = 0, gw = 0;
    for (int64_t j = 0; j < topk; ++j) {
      selected += p[static_cast<size_t>(indices.i32()[t * topk + j])];
      gw += static_cast<double>(cpu::load(d_weights, t * topk + j)) * cpu::load(weights, t * topk + j);
    }
    for (int64_t j = 0; j < topk; ++j) {
      const auto i = static_cast<size_t>(indices.i32()[t * topk + j]);
      dp[i] = static_cast<float>((cpu::load(d_weights, t * topk + j) - gw) / selected);
    }
    double dot = 0;
    for (size_t i = 0; i < e; ++i)
      dot += static_cast<double>(p[i]) * dp[i];
    for (size_t i = 0; i < e; ++i)
      dx[i] = static_cast<float>(p[i] * (dp[i] - dot));
    cpu::store_row(d_logits, t * experts, experts, dx.data());
  }
}

void CpuBackend::moe_permute_forward(Tensor& permuted, const Tensor& in, const Tensor& positions, int64_t tokens,
                                     int64_t topk, int64_t h)
{
  cpu::require_elements("moe_permute_forward in", in, tokens * h);
  cpu::require_elements("moe_permute_forward permuted", permuted, tokens * topk * h);
  std::vector<float> row(static_cast<size_t>(h));
  for (int64_t t = 0; t < tokens; ++t) {
    cpu::load_row(in, t * h, h, row.data());
    for (int64_t j = 0; j < topk; ++j)
      cpu::store_row(permuted, positions.i32()[t * topk + j] * h, h, row.data());
  }
}

void CpuBackend::moe_permute_backward(Tensor& d_in, const Tensor& d_permuted, const Tensor& positions,
                                      int64_t tokens, int64_t topk, int64_t h)
{
  cpu::require_elements("moe_permute_backward d_in", d_in, tokens * h);
  std::vector<float> row(static_cast<size_t>(h)), sum(static_cast<size_t>(h));
  for (int64_t t = 0; t < tokens; ++t) {
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (int64_t j = 0; j < topk; ++j) {
      cpu::load_row(d_permuted, positions.i32()[t * topk + j] * h, h, row.data());
      for (size_t c = 0; c < sum.size(); ++c)
        sum[c] += row[c];
    }
    cpu::store_row(d_in, t * h, h, sum.data());
  }
}

void CpuBackend::moe_unpermute_forward(Tensor& out, const Tensor& expert_out, const Tensor& weights,
                                       const Tensor& positions, int64_t tokens, int64_t topk, int64_t h)
{
  cpu::require_elements("moe_unpermute_forward out", out, tokens * h);
  cpu::require_elements("moe_unpermute_forward expert_out", expert_out, tokens * topk * h);
  std::vector<float> row(static_cast<size_t>(h)), sum(static_cast<size_t>(h));
  for (int64_t t = 0; t < tokens; ++t) {
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (int64_t j = 0; j < topk; ++j) {
      const float w = cpu::load(weights, t * topk + j);
      cpu::load_row(expert_out, positions.i32()[t * topk + j] * h, h, row.data());
      for (size_t c = 0; c < sum.size(); ++c)
        sum[c] += w * row[c];
    }
    cpu::store_row(out, t * h, h, sum.data());
  }
}

void CpuBackend::moe_unpermute_backward(Tensor& d_expert_out, Tensor& d_weights, const Tensor& d_out,
                                        const Tensor& expert_out, const Tensor& weights, const Tensor& positions,
                                        int64_t tokens, int64_t topk, int64_t h)
{
  cpu::require_elements("moe_unpermute_backward d_out", d_out, tokens * h);
  cpu::require_elements("moe_unpermute_backward d_expert_out", d_expert_out, tokens * topk * h);
  std::vector<float> dy(static_cast<size_t>(h)), row(static_cast<size_t>(h)), scaled(static_cast<size_t>(h));
  for (int64_t t = 0; t < tokens; ++t) {
    cpu::load_row(d_out, t * h, h, dy.data());
    for (int64_t j = 0; j < topk; ++j) {
      const int64_t at = positions.i32()[t * topk + j] * h;
      const float w = cpu::load(weights, t * topk + j);
      cpu::load_row(expert_out, at, h, row.data());
      double dot = 0;
      for (size_t c = 0; c < dy.size(); ++c) {
        dot += static_cast<double>(dy[c]) * row[c];
        scaled[c] = w * dy[c];
      }
      cpu::store_row(d_expert_out, at, h, scaled.data());
      cpu::store(d_weights, t * topk + j, static_cast<float>(dot));
    }
  }
}

} // namespace gputwin::engine
