// SwiGLU on the CPU (Shazeer 2020; Llama's MLP): out = silu(gate) * up, silu(x) = x sigmoid(x), over rows of
// [gate | up] (the column-parallel fc1's output on one rank: its share of the gate and of the up projection).
#include "cpu_access.hpp"
#include "gputwin/engine/backend/cpu_backend.hpp"

#include <cmath>

namespace gputwin::engine {

namespace {

float sigmoid(float x)
{
  return 1.0f / (1.0f + std::exp(-x));
}

} // namespace

void CpuBackend::swiglu_forward(Tensor& out, const Tensor& in, int64_t rows, int64_t cols)
{
  cpu::require_elements("swiglu_forward in", in, rows * 2 * cols);
  cpu::require_elements("swiglu_forward out", out, rows * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float gate = cpu::load(in, r * 2 * cols + c), up = cpu::load(in, r * 2 * cols + cols + c);
      cpu::store(out, r * cols + c, gate * sigmoid(gate) * up);
    }
}

// d gate = dy up silu'(gate), silu'(x) = sigmoid(x) (1 + x (1 - sigmoid(x))); d up = dy silu(gate).
void CpuBackend::swiglu_backward(Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t rows, int64_t cols)
{
  cpu::require_elements("swiglu_backward in", in, rows * 2 * cols);
  cpu::require_elements("swiglu_backward d_out", d_out, rows * cols);
  cpu::require_elements("swiglu_backward d_in", d_in, rows * 2 * cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const float gate = cpu::load(in, r * 2 * cols + c), up = cpu::load(in, r * 2 * cols + cols + c);
      const float dy = cpu::load(d_out, r * cols + c), sg = sigmoid(gate);
      cpu::store(d_in, r * 2 * cols + c, dy * up * sg * (1.0f + gate * (1.0f - sg)));
      cpu::store(d_in, r * 2 * cols + cols + c, dy * gate * sg);
    }
}

} // namespace gputwin::engine
