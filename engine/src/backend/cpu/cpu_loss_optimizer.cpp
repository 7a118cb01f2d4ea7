// Fused vocabulary-parallel cross-entropy, Adam and the elementwise kernels on the CPU.
#include "cpu_access.hpp"
#include "gputwin/engine/backend/cpu_backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace gputwin::engine {

void CpuBackend::cross_entropy_local_max(Tensor& row_max, const Tensor& logits, int64_t rows, int64_t cols,
                                         int64_t valid_cols)
{
  cpu::require_elements("cross_entropy_local_max", logits, rows * cols);
  float* out = row_max.f32();
  const float* l = logits.f32();
  for (int64_t r = 0; r < rows; ++r) {
    float m = -INFINITY;
    for (int64_t c = 0; c < valid_cols; ++c)
      m = std::max(m, l[r * cols + c]);
    out[r] = m;
  }
}

void CpuBackend::cross_entropy_local_sums(Tensor& sum_exp, Tensor& target_logit, const Tensor& logits,
                                          const Tensor& targets, const Tensor& row_max, int64_t rows, int64_t cols,
                                          int64_t valid_cols, int64_t vocab_start)
{
  cpu::require_elements("cross_entropy_local_sums", logits, rows * cols);
  const float* l = logits.f32();
  const int32_t* t = targets.i32();
  for (int64_t r = 0; r < rows; ++r) {
    const float m = row_max.f32()[r];
    float sum = 0;
    for (int64_t c = 0; c < valid_cols; ++c)
      sum += std::exp(l[r * cols + c] - m);
    sum_exp.f32()[r] = sum;
    const int64_t local = t[r] - vocab_start;
    target_logit.f32()[r] = local >= 0 && local < valid_cols ? l[r * cols + local] : 0.0f;
  }
}

void CpuBackend::cross_entropy_backward(Tensor& d_logits, const Tensor& logits, const Tensor& targets,
                                        const Tensor& row_max, const Tensor& sum_exp, int64_t rows, int64_t cols,
                                        int64_t valid_cols, int64_t vocab_start, float scale)
{
  cpu::require_elements("cross_entropy_backward", logits, rows * cols);
  cpu::require_elements("cross_entropy_backward", d_logits, rows * cols);
  const float* l = logits.f32();
  float* d = d_logits.f32();
  const int32_t* t = targets.i32();
  for (int64_t r = 0; r < rows; ++r) {
    const float m = row_max.f32()[r];
    const float inv_sum = 1.0f / sum_exp.f32()[r];
    const int64_t local = t[r] - vocab_start;
    for (int64_t c = 0; c < cols; ++c) {
      if (c >= valid_cols) {
        d[r * cols + c] = 0.0f;
        continue;
      }
      const float p = std::exp(l[r * cols + c] - m) * inv_sum;
      d[r * cols + c] = scale * (p - (c == local ? 1.0f : 0.0f));
    }
  }
}

void CpuBackend::adam_step(Tensor& master, Tensor& momentum, Tensor& variance, const Tensor& grad, int64_t n,
                           const AdamHyper& hyper, int64_t step)
{
  cpu::require_elements("adam_step master", master, n);
  cpu::require_elements("adam_step grad", grad, n);
  float* w = master.f32();
  float* m = momentum.f32();
  float* v = variance.f32();
  const float* g = grad.f32();
  const float correction1 = 1.0f - std::pow(hyper.beta1, static_cast<float>(step));
  const float correction2 = 1.0f - std::pow(hyper.beta2, static_cast<float>(step));
  for (int64_t i = 0; i < n; ++i) {
    m[i] = hyper.beta1 * m[i] + (1.0f - hyper.beta1) * g[i];
    v[i] = hyper.beta2 * v[i] + (1.0f - hyper.beta2) * g[i] * g[i];
    const float m_hat = m[i] / correction1;
    const float v_hat = v[i] / correction2;
    w[i] -= hyper.learning_rate * (m_hat / (std::sqrt(v_hat) + hyper.epsilon) + hyper.weight_decay * w[i]);
  }
}

void CpuBackend::add(Tensor& out, const Tensor& a, const Tensor& b, int64_t n)
{
  cpu::require_elements("add a", a, n);
  cpu::require_elements("add b", b, n);
  cpu::require_elements("add out", out, n);
  for (int64_t i = 0; i < n; ++i)
    cpu::store(out, i, cpu::load(a, i) + cpu::load(b, i));
}

void CpuBackend::add_bias(Tensor& out, const Tensor& in, const Tensor& bias, int64_t rows, int64_t cols)
{
  cpu::require_elements("add_bias in", in, rows * cols);
  cpu::require_elements("add_bias out", out, rows * cols);
  cpu::require_elements("add_bias bias", bias, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      cpu::store(out, r * cols + c, cpu::load(in, r * cols + c) + cpu::load(bias, c));
}

void CpuBackend::bias_backward(Tensor& d_bias, const Tensor& d_out, int64_t rows, int64_t cols)
{
  cpu::require_elements("bias_backward d_out", d_out, rows * cols);
  float* db = d_bias.f32();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      db[c] += cpu::load(d_out, r * cols + c);
}

void CpuBackend::copy(Tensor& out, const Tensor& in, int64_t n)
{
  cpu::require_elements("copy in", in, n);
  cpu::require_elements("copy out", out, n);
  for (int64_t i = 0; i < n; ++i)
    cpu::store(out, i, cpu::load(in, i));
}

void CpuBackend::accumulate(Tensor& out, const Tensor& in, int64_t n)
{
  cpu::require_elements("accumulate in", in, n);
  cpu::require_elements("accumulate out", out, n);
  float* o = out.f32();
  for (int64_t i = 0; i < n; ++i)
    o[i] += cpu::load(in, i);
}

void CpuBackend::zero(Tensor& t)
{
  if (t.defined())
    std::memset(t.raw(), 0, static_cast<size_t>(t.bytes()));
}

} // namespace gputwin::engine
