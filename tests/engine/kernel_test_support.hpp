#pragma once
// Shared by the CPU kernel tests: random and zero host tensors, and the central finite-difference check of a
// backward kernel against its forward.
#include "gputwin/engine/backend/cpu_backend.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

namespace gputwin::engine::testing {

class KernelTest : public ::testing::Test {
protected:
  explicit KernelTest(unsigned seed = 42) : rng(seed) {}

  Tensor random(DType dtype, std::vector<int64_t> shape, float scale = 1.0f)
  {
    Tensor t(memory, MemoryPurpose::Workspace, dtype, std::move(shape));
    std::normal_distribution<float> normal(0.0f, scale);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (dtype == DType::F32)
        t.f32()[i] = normal(rng);
      else
        t.bf16()[i] = float_to_bf16(normal(rng));
    }
    return t;
  }
  Tensor zeros(DType dtype, std::vector<int64_t> shape)
  {
    return Tensor(memory, MemoryPurpose::Workspace, dtype, std::move(shape));
  }

  MemoryAccountant memory;
  CpuBackend cpu;
  std::mt19937 rng;
};

// Checks d_in from a backward kernel against central differences of sum(forward(in) * d_out) with `step`, at
// every 7th element of `in` (f32), to within `tolerance` of the largest derivative.
inline void finite_difference_check(Tensor& in, const Tensor& d_out, Tensor& d_in,
                                    const std::function<void(Tensor&)>& forward, Tensor& out, const char* what,
                                    float step = 1e-2f, double tolerance = 2e-3)
{
  auto objective = [&] {
    forward(out);
    double s = 0;
    for (int64_t i = 0; i < out.numel(); ++i)
      s += static_cast<double>(load_float(out, i)) * load_float(d_out, i);
    return s;
  };
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < in.numel(); i += 7) {
    const float saved = in.f32()[i];
    in.f32()[i] = saved + step;
    const double up = objective();
    in.f32()[i] = saved - step;
    const double down = objective();
    in.f32()[i] = saved;
    const double numeric = (up - down) / (2 * step);
    worst = std::max(worst, std::abs(numeric - d_in.f32()[i]));
    scale = std::max(scale, std::abs(numeric));
  }
  EXPECT_LT(worst, tolerance * std::max(scale, 1.0)) << what;
}

} // namespace gputwin::engine::testing
