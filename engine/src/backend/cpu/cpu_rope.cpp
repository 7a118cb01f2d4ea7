// Rotary position embedding on the CPU (Su et al. 2021), rotate-half as Megatron-LM and Llama apply it: in each
// Q head and K group the pairs (c, c + d/2) turn by angle position x base^(-2c/d). Backward turns the gradient
// back (the rotation is orthogonal: its transpose is its inverse).
#include "cpu_attention_layout.hpp"
#include "gputwin/engine/backend/cpu_backend.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

namespace gputwin::engine {

namespace {

// Rotates every Q head and K group of qkv by +angle (direction 1) or -angle (direction -1).
void rotate(Tensor& qkv, const RopeDims& r, float direction, const char* kernel)
{
  const AttentionDims& d = r.attention;
  if (d.head_dim % 2 != 0)
    throw std::logic_error(std::string(kernel) + ": head_dim " + std::to_string(d.head_dim) + " is odd");
  cpu::require_elements(kernel, qkv, d.seq * d.batch * d.qkv_width());
  const int64_t half = d.head_dim / 2, rotated_heads = d.heads + d.groups(); // Q heads, then K groups
  std::vector<float> inv_freq(static_cast<size_t>(half)), x(static_cast<size_t>(d.head_dim)), y(x.size());
  for (int64_t c = 0; c < half; ++c) // in double, so every backend gets the same angle to fp32
    inv_freq[static_cast<size_t>(c)] = static_cast<float>(
        std::pow(static_cast<double>(r.base), -2.0 * static_cast<double>(c) / static_cast<double>(d.head_dim)));
  for (int64_t i = 0; i < d.seq; ++i) {
    const float position = static_cast<float>(r.first_position + i);
    for (int64_t b = 0; b < d.batch; ++b)
      for (int64_t head = 0; head < rotated_heads; ++head) {
        const int64_t at = (i * d.batch + b) * d.qkv_width() + head * d.head_dim;
        cpu::load_row(qkv, at, d.head_dim, x.data());
        for (int64_t c = 0; c < half; ++c) {
          const float angle = position * inv_freq[static_cast<size_t>(c)];
          const float cos_a = std::cos(angle), sin_a = direction * std::sin(angle);
          const float x1 = x[static_cast<size_t>(c)], x2 = x[static_cast<size_t>(c + half)];
          y[static_cast<size_t>(c)] = x1 * cos_a - x2 * sin_a;
          y[static_cast<size_t>(c + half)] = x2 * cos_a + x1 * sin_a;
        }
        cpu::store_row(qkv, at, d.head_dim, y.data());
      }
  }
}

} // namespace

void CpuBackend::rope_forward(Tensor& qkv, const RopeDims& dims)
{
  rotate(qkv, dims, 1.0f, "rope_forward");
}

void CpuBackend::rope_backward(Tensor& d_qkv, const RopeDims& dims)
{
  rotate(d_qkv, dims, -1.0f, "rope_backward");
}

} // namespace gputwin::engine
