// Layernorm, GeLU and squared ReLU on the CPU.
#include "cpu_access.hpp"
#include "gputwin/engine/backend/cpu_backend.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gputwin::engine {

namespace {

// Mean and 1/sqrt(var + eps) of one row, accumulated in double in index order.
void row_statistics(const float* x, int64_t cols, float eps, float& mean, float& rstd)
{
  double sum = 0;
  for (int64_t c = 0; c < cols; ++c)
    sum += x[c];
  const double mu = sum / static_cast<double>(cols);
  double var = 0;
  for (int64_t c = 0; c < cols; ++c)
    var += (x[c] - mu) * (x[c] - mu);
  var /= static_cast<double>(cols);
  mean = static_cast<float>(mu);
  rstd = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
}

constexpr float gelu_scale = 0.7978845608028654f; // sqrt(2 / pi)
constexpr float gelu_cubic = 0.044715f;

} // namespace

void CpuBackend::layernorm_forward(Tensor& out, const Tensor& in, const Tensor& gamma, const Tensor& beta, int64_t rows,
                                   int64_t cols, float eps)
{
  cpu::require_elements("layernorm_forward in", in, rows * cols);
  cpu::require_elements("layernorm_forward out", out, rows * cols);
  std::vector<float> x(static_cast<size_t>(cols)), g(static_cast<size_t>(cols)), b(static_cast<size_t>(cols)),
      y(static_cast<size_t>(cols));
  cpu::load_row(gamma, 0, cols, g.data());
  cpu::load_row(beta, 0, cols, b.data());
  for (int64_t r = 0; r < rows; ++r) {
    cpu::load_row(in, r * cols, cols, x.data());
    float mean = 0, rstd = 0;
    row_statistics(x.data(), cols, eps, mean, rstd);
    for (int64_t c = 0; c < cols; ++c)
      y[static_cast<size_t>(c)] =
          (x[static_cast<size_t>(c)] - mean) * rstd * g[static_cast<size_t>(c)] + b[static_cast<size_t>(c)];
    cpu::store_row(out, r * cols, cols, y.data());
  }
}

void CpuBackend::layernorm_backward(Tensor& d_in, Tensor& d_gamma, Tensor& d_beta, const Tensor& d_out,
                                    const Tensor& in, const Tensor& gamma, int64_t rows, int64_t cols, float eps)
{
  cpu::require_elements("layernorm_backward in", in, rows * cols);
  cpu::require_elements("layernorm_backward d_out", d_out, rows * cols);
  cpu::require_elements("layernorm_backward d_in", d_in, rows * cols);
  const size_t n = static_cast<size_t>(cols);
  std::vector<float> x(n), dy(n), g(n), xhat(n), dx(n);
  cpu::load_row(gamma, 0, cols, g.data());
  float* dg = d_gamma.f32();
  float* db = d_beta.f32();
  for (int64_t r = 0; r < rows; ++r) {
    cpu::load_row(in, r * cols, cols, x.data());
    cpu::load_row(d_out, r * cols, cols, dy.data());
    float mean = 0, rstd = 0;
    row_statistics(x.data(), cols, eps, mean, rstd);
    double mean_dxhat = 0, mean_dxhat_xhat = 0;
    for (size_t c = 0; c < n; ++c) {
      xhat[c] = (x[c] - mean) * rstd;
      const float dxhat = dy[c] * g[c];
      mean_dxhat += dxhat;
      mean_dxhat_xhat += dxhat * xhat[c];
      dg[c] += dy[c] * xhat[c];
      db[c] += dy[c];
    }
    const float m1 = static_cast<float>(mean_dxhat / static_cast<double>(cols));
    const float m2 = static_cast<float>(mean_dxhat_xhat / static_cast<double>(cols));
    for (size_t c = 0; c < n; ++c)
      dx[c] = rstd * (dy[c] * g[c] - m1 - xhat[c] * m2);
    cpu::store_row(d_in, r * cols, cols, dx.data());
  }
}

void CpuBackend::gelu_forward(Tensor& out, const Tensor& in, int64_t n)
{
  cpu::require_elements("gelu_forward in", in, n);
  cpu::require_elements("gelu_forward out", out, n);
  for (int64_t i = 0; i < n; ++i) {
    const float x = cpu::load(in, i);
    cpu::store(out, i, 0.5f * x * (1.0f + std::tanh(gelu_scale * (x + gelu_cubic * x * x * x))));
  }
}

void CpuBackend::gelu_backward(Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t n)
{
  cpu::require_elements("gelu_backward in", in, n);
  cpu::require_elements("gelu_backward d_out", d_out, n);
  cpu::require_elements("gelu_backward d_in", d_in, n);
  for (int64_t i = 0; i < n; ++i) {
    const float x = cpu::load(in, i);
    const float t = std::tanh(gelu_scale * (x + gelu_cubic * x * x * x));
    const float dt = gelu_scale * (1.0f + 3.0f * gelu_cubic * x * x) * (1.0f - t * t);
    cpu::store(d_in, i, cpu::load(d_out, i) * (0.5f * (1.0f + t) + 0.5f * x * dt));
  }
}

void CpuBackend::squared_relu_forward(Tensor& out, const Tensor& in, int64_t n)
{
  cpu::require_elements("squared_relu_forward in", in, n);
  cpu::require_elements("squared_relu_forward out", out, n);
  for (int64_t i = 0; i < n; ++i) {
    const float relu = std::max(cpu::load(in, i), 0.0f);
    cpu::store(out, i, relu * relu);
  }
}

void CpuBackend::squared_relu_backward(Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t n)
{
  cpu::require_elements("squared_relu_backward in", in, n);
  cpu::require_elements("squared_relu_backward d_out", d_out, n);
  cpu::require_elements("squared_relu_backward d_in", d_in, n);
  for (int64_t i = 0; i < n; ++i)
    cpu::store(d_in, i, cpu::load(d_out, i) * 2.0f * std::max(cpu::load(in, i), 0.0f));
}

} // namespace gputwin::engine
