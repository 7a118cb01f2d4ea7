// Cache-blocked fp32 GEMM (Goto-style packing): B panels of KC x NC and A blocks of MC x KC are converted to
// fp32 and packed contiguously, then a 4-row micro-kernel accumulates into an fp32 block of C that the
// compiler vectorises along n. Each C element sums over k in index order from 0, whatever the blocking, so
// results are bit-reproducible. Operands are read as bf16 (an fp32 operand is rounded while packed,
// cpu::load_operand), the sums are fp32: the CUDA backend's tensor-core GEMM computes the same.
#include "cpu_access.hpp"
#include "gputwin/engine/backend/cpu_backend.hpp"

#include <algorithm>
#include <vector>

namespace gputwin::engine {

namespace {

constexpr int64_t block_n = 512; // NC: columns of a packed B panel (2 KiB per row of fp32)
constexpr int64_t block_k = 256; // KC: depth of a panel
constexpr int64_t block_m = 64;  // MC: rows of a packed A block

// Packs op(B)[pc .. pc+kc) x [jc .. jc+nc) row-major into `out` (kc x nc).
void pack_b(const Tensor& b, bool transpose, int64_t n, int64_t k, int64_t pc, int64_t kc, int64_t jc, int64_t nc,
            float* out)
{
  for (int64_t kk = 0; kk < kc; ++kk) {
    float* row = out + kk * nc;
    if (!transpose) {
      cpu::load_operand_row(b, (pc + kk) * n + jc, nc, row);
    } else {
      for (int64_t j = 0; j < nc; ++j)
        row[j] = cpu::load_operand(b, (jc + j) * k + pc + kk);
    }
  }
}

// Packs op(A)[ic .. ic+mc) x [pc .. pc+kc) row-major into `out` (mc x kc).
void pack_a(const Tensor& a, bool transpose, int64_t m, int64_t k, int64_t ic, int64_t mc, int64_t pc, int64_t kc,
            float* out)
{
  for (int64_t i = 0; i < mc; ++i) {
    float* row = out + i * kc;
    if (!transpose) {
      cpu::load_operand_row(a, (ic + i) * k + pc, kc, row);
    } else {
      for (int64_t kk = 0; kk < kc; ++kk)
        row[kk] = cpu::load_operand(a, (pc + kk) * m + ic + i);
    }
  }
}

// acc (mc x nc, row stride nc) += ap (mc x kc) bp (kc x nc).
void micro_kernel(float* acc, const float* ap, const float* bp, int64_t mc, int64_t kc, int64_t nc)
{
  int64_t i = 0;
  for (; i + 4 <= mc; i += 4) {
    float* __restrict c0 = acc + i * nc;
    float* __restrict c1 = c0 + nc;
    float* __restrict c2 = c1 + nc;
    float* __restrict c3 = c2 + nc;
    for (int64_t kk = 0; kk < kc; ++kk) {
      const float a0 = ap[i * kc + kk], a1 = ap[(i + 1) * kc + kk], a2 = ap[(i + 2) * kc + kk],
                  a3 = ap[(i + 3) * kc + kk];
      const float* __restrict bk = bp + kk * nc;
      for (int64_t j = 0; j < nc; ++j) {
        c0[j] += a0 * bk[j];
        c1[j] += a1 * bk[j];
        c2[j] += a2 * bk[j];
        c3[j] += a3 * bk[j];
      }
    }
  }
  for (; i < mc; ++i) {
    float* __restrict c0 = acc + i * nc;
    for (int64_t kk = 0; kk < kc; ++kk) {
      const float a0 = ap[i * kc + kk];
      const float* __restrict bk = bp + kk * nc;
      for (int64_t j = 0; j < nc; ++j)
        c0[j] += a0 * bk[j];
    }
  }
}

} // namespace

void CpuBackend::gemm(Tensor& c, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, int64_t m,
                      int64_t n, int64_t k, float alpha, float beta)
{
  cpu::require_float("gemm", a);
  cpu::require_float("gemm", b);
  cpu::require_float("gemm", c);
  cpu::require_elements("gemm A", a, m * k);
  cpu::require_elements("gemm B", b, k * n);
  cpu::require_elements("gemm C", c, m * n);
  if (c.dtype() == DType::BF16 && beta != 0.0f)
    throw std::logic_error("gemm: a bf16 C needs beta = 0 (accumulate into f32)");

  // Kernel-internal scratch (like a cuBLAS workspace); reused across calls of this rank's thread.
  thread_local std::vector<float> b_panel, a_block, acc;
  b_panel.resize(static_cast<size_t>(block_k * block_n));
  a_block.resize(static_cast<size_t>(block_m * block_k));
  for (int64_t jc = 0; jc < n; jc += block_n) {
    const int64_t nc = std::min(block_n, n - jc);
    acc.assign(static_cast<size_t>(m * nc), 0.0f);
    for (int64_t pc = 0; pc < k; pc += block_k) {
      const int64_t kc = std::min(block_k, k - pc);
      pack_b(b, transpose_b, n, k, pc, kc, jc, nc, b_panel.data());
      for (int64_t ic = 0; ic < m; ic += block_m) {
        const int64_t mc = std::min(block_m, m - ic);
        pack_a(a, transpose_a, m, k, ic, mc, pc, kc, a_block.data());
        micro_kernel(acc.data() + ic * nc, a_block.data(), b_panel.data(), mc, kc, nc);
      }
    }
    for (int64_t i = 0; i < m; ++i) {
      const float* row = acc.data() + i * nc;
      if (c.dtype() == DType::F32) {
        float* out = c.f32() + i * n + jc;
        for (int64_t j = 0; j < nc; ++j)
          out[j] = alpha * row[j] + (beta == 0.0f ? 0.0f : beta * out[j]);
      } else {
        uint16_t* out = c.bf16() + i * n + jc;
        for (int64_t j = 0; j < nc; ++j)
          out[j] = float_to_bf16(alpha * row[j]);
      }
    }
  }
}

} // namespace gputwin::engine
