// Counter-based dropout and the vocabulary-parallel embedding on the CPU.
#include "cpu_access.hpp"
#include "gputwin/engine/backend/counter_rng.hpp"
#include "gputwin/engine/backend/cpu_backend.hpp"

namespace gputwin::engine {

void CpuBackend::dropout_forward(Tensor& out, Tensor& mask, const Tensor& in, const DropoutSite& site)
{
  const auto& l = site.local_dims;
  const auto& o = site.offsets;
  const auto& g = site.global_dims;
  const int64_t n = l[0] * l[1] * l[2] * l[3];
  cpu::require_elements("dropout_forward in", in, n);
  cpu::require_elements("dropout_forward out", out, n);
  cpu::require_elements("dropout_forward mask", mask, n);
  for (size_t d = 0; d < 4; ++d)
    if (o[d] + l[d] > g[d])
      throw std::logic_error("dropout_forward: local block outside the logical tensor");
  const float keep_scale = 1.0f / (1.0f - site.probability);
  uint8_t* m = mask.u8();
  int64_t e = 0;
  for (int64_t i0 = 0; i0 < l[0]; ++i0)
    for (int64_t i1 = 0; i1 < l[1]; ++i1)
      for (int64_t i2 = 0; i2 < l[2]; ++i2) {
        const int64_t row = (((o[0] + i0) * g[1] + o[1] + i1) * g[2] + o[2] + i2) * g[3] + o[3];
        for (int64_t i3 = 0; i3 < l[3]; ++i3, ++e) {
          const bool keep = counter_uniform(site.key, static_cast<uint64_t>(row + i3)) >= site.probability;
          m[e] = keep ? 1 : 0;
          cpu::store(out, e, keep ? cpu::load(in, e) * keep_scale : 0.0f);
        }
      }
}

void CpuBackend::dropout_backward(Tensor& d_in, const Tensor& d_out, const Tensor& mask, float probability)
{
  const int64_t n = mask.numel();
  cpu::require_elements("dropout_backward d_out", d_out, n);
  cpu::require_elements("dropout_backward d_in", d_in, n);
  const float keep_scale = 1.0f / (1.0f - probability);
  const uint8_t* m = mask.u8();
  for (int64_t i = 0; i < n; ++i)
    cpu::store(d_in, i, m[i] ? cpu::load(d_out, i) * keep_scale : 0.0f);
}

void CpuBackend::embedding_forward(Tensor& out, const Tensor& tokens, const Tensor& table, int64_t vocab_start,
                                   int64_t owned_rows, int64_t n, int64_t h)
{
  cpu::require_elements("embedding_forward tokens", tokens, n);
  cpu::require_elements("embedding_forward out", out, n * h);
  cpu::require_elements("embedding_forward table", table, owned_rows * h);
  const int32_t* ids = tokens.i32();
  for (int64_t t = 0; t < n; ++t) {
    const int64_t row = ids[t] - vocab_start;
    for (int64_t c = 0; c < h; ++c)
      cpu::store(out, t * h + c, row >= 0 && row < owned_rows ? cpu::load(table, row * h + c) : 0.0f);
  }
}

void CpuBackend::embedding_backward(Tensor& d_table, const Tensor& d_out, const Tensor& tokens, int64_t vocab_start,
                                    int64_t owned_rows, int64_t n, int64_t h)
{
  cpu::require_elements("embedding_backward tokens", tokens, n);
  cpu::require_elements("embedding_backward d_out", d_out, n * h);
  cpu::require_elements("embedding_backward d_table", d_table, owned_rows * h);
  const int32_t* ids = tokens.i32();
  float* dt = d_table.f32();
  for (int64_t t = 0; t < n; ++t) {
    const int64_t row = ids[t] - vocab_start;
    if (row < 0 || row >= owned_rows)
      continue;
    for (int64_t c = 0; c < h; ++c)
      dt[row * h + c] += cpu::load(d_out, t * h + c);
  }
}

} // namespace gputwin::engine
