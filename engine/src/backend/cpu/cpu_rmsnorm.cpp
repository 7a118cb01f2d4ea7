// RMSNorm on the CPU (Zhang & Sennrich 2019; Llama): y = x / rms(x) * gamma, rms(x) = sqrt(mean(x^2) + eps).
#include "cpu_access.hpp"
#include "gputwin/engine/backend/cpu_backend.hpp"

#include <cmath>
#include <vector>

namespace gputwin::engine {

namespace {

// 1 / rms of one row, the squares accumulated in double in index order (deterministic, like the layernorm).
float inverse_rms(const float* x, int64_t cols, float eps)
{
  double sum = 0;
  for (int64_t c = 0; c < cols; ++c)
    sum += static_cast<double>(x[c]) * x[c];
  return static_cast<float>(1.0 / std::sqrt(sum / static_cast<double>(cols) + static_cast<double>(eps)));
}

} // namespace

void CpuBackend::rmsnorm_forward(Tensor& out, const Tensor& in, const Tensor& gamma, int64_t rows, int64_t cols,
                                 float eps)
{
  cpu::require_elements("rmsnorm_forward in", in, rows * cols);
  cpu::require_elements("rmsnorm_forward out", out, rows * cols);
  cpu::require_elements("rmsnorm_forward gamma", gamma, cols);
  const size_t n = static_cast<size_t>(cols);
  std::vector<float> x(n), g(n), y(n);
  cpu::load_row(gamma, 0, cols, g.data());
  for (int64_t r = 0; r < rows; ++r) {
    cpu::load_row(in, r * cols, cols, x.data());
    const float rstd = inverse_rms(x.data(), cols, eps);
    for (size_t c = 0; c < n; ++c)
      y[c] = x[c] * rstd * g[c];
    cpu::store_row(out, r * cols, cols, y.data());
  }
}

// With xhat = x rstd: d_gamma += dy xhat; dx = rstd (dy gamma - xhat mean(dy gamma xhat)).
void CpuBackend::rmsnorm_backward(Tensor& d_in, Tensor& d_gamma, const Tensor& d_out, const Tensor& in,
                                  const Tensor& gamma, int64_t rows, int64_t cols, float eps)
{
  cpu::require_elements("rmsnorm_backward in", in, rows * cols);
  cpu::require_elements("rmsnorm_backward d_out", d_out, rows * cols);
  cpu::require_elements("rmsnorm_backward d_in", d_in, rows * cols);
  cpu::require_elements("rmsnorm_backward d_gamma", d_gamma, cols);
  const size_t n = static_cast<size_t>(cols);
  std::vector<float> x(n), dy(n), g(n), xhat(n), dx(n);
  cpu::load_row(gamma, 0, cols, g.data());
  float* dg = d_gamma.f32();
  for (int64_t r = 0; r < rows; ++r) {
    cpu::load_row(in, r * cols, cols, x.data());
    cpu::load_row(d_out, r * cols, cols, dy.data());
    const float rstd = inverse_rms(x.data(), cols, eps);
    double mean_dxhat_xhat = 0;
    for (size_t c = 0; c < n; ++c) {
      xhat[c] = x[c] * rstd;
      mean_dxhat_xhat += dy[c] * g[c] * xhat[c];
      dg[c] += dy[c] * xhat[c];
    }
    const float m = static_cast<float>(mean_dxhat_xhat / static_cast<double>(cols));
    for (size_t c = 0; c < n; ++c)
      dx[c] = rstd * (dy[c] * g[c] - xhat[c] * m);
    cpu::store_row(d_in, r * cols, cols, dx.data());
  }
}

} // namespace gputwin::engine
