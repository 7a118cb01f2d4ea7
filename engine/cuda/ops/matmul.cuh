#pragma once
// GEMM through cuBLASLt, row-major as the engine stores every matrix: C (m, n) = alpha op(A) op(B) + beta C,
// optionally strided-batched, with the bias and GeLU(bias) epilogues fused where the inputs are bf16.
// cuBLASLt is column-major, so the row-major product is computed as C^T = op(B)^T op(A)^T (llm.c
// matmul.cuh). Every product runs on the tensor cores as bf16 x bf16 with fp32 accumulation: an fp32 operand
// (an activation gradient) is rounded to bf16 first (into dense scratch), as Megatron-LM keeps activation
// gradients in bf16; the CPU backend reads its operands the same way (cpu::load_operand), so both compute the
// same products. The output is fp32 or bf16 (cuBLASLt rounds it once).

#include "cuda/ops/common.cuh"
#include "cuda/ops/matmul_context.cuh"

#include <cublasLt.h>

#include <stdexcept>

namespace gputwin::engine::cuda {

// One operand as stored: row-major with leading dimension `ld` (elements between rows), `batch_stride`
// elements between the matrices of a batch, read transposed when `transpose`.
struct MatmulOperand {
  const void* p = nullptr;
  bool bf16 = false;
  int64_t ld = 0;
  int64_t batch_stride = 0;
  bool transpose = false;
};

struct MatmulOutput {
  void* p = nullptr;
  bool bf16 = false;
  int64_t ld = 0;
  int64_t batch_stride = 0;
};

enum class MatmulEpilogue {
  None,
  Bias,     // C = op(A) op(B) + bias (n, bias broadcast over rows)
  GeluBias, // C = gelu(op(A) op(B) + bias), pre_gelu (m, n, bf16) = op(A) op(B) + bias (for GeLU backward)
};

__global__ void round_to_bf16_kernel(__nv_bfloat16* out, const float* in, int64_t rows, int64_t cols, int64_t ld,
                                     int64_t batch_stride, int64_t batch)
{
  // out (batch, rows, cols) dense bf16 <- in (batch, rows, ld-strided cols) fp32, round to nearest even
  const size_t total = static_cast<size_t>(batch) * static_cast<size_t>(rows) * static_cast<size_t>(cols);
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t c = i % static_cast<size_t>(cols), r = (i / static_cast<size_t>(cols)) % static_cast<size_t>(rows);
    const size_t b = i / (static_cast<size_t>(cols) * static_cast<size_t>(rows));
    out[i] = __float2bfloat16_rn(in[b * static_cast<size_t>(batch_stride) + r * static_cast<size_t>(ld) + c]);
  }
}

namespace detail {

inline uint32_t alignment_of(const void* p, int64_t stride_bytes)
{
  uint64_t a = reinterpret_cast<uintptr_t>(p) | static_cast<uint64_t>(stride_bytes) | 256u;
  return static_cast<uint32_t>(a & (~a + 1)); // lowest set bit, at most 256
}

// One cuBLASLt matmul of bf16 operands into an fp32 or bf16 C; D = C in place. REQUIRES: a.bf16 && b.bf16.
inline void lt_matmul(MatmulContext& ctx, MatmulOutput c, MatmulOperand a, MatmulOperand b, int64_t m, int64_t n,
                      int64_t k, int64_t batch, float alpha, float beta, MatmulEpilogue epilogue, const void* bias,
                      bool bias_bf16, void* pre_gelu, cudaStream_t stream)
{
  if (!a.bf16 || !b.bf16)
    throw std::logic_error("lt_matmul: expected bf16 operands");
  const cudaDataType_t ab_type = CUDA_R_16BF;
  const cudaDataType_t c_type = c.bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const int64_t ab_bytes = 2, c_bytes = c.bf16 ? 2 : 4;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  // Column-major view: D^T (n, m) = opB'(n, k) x opA'(k, m), with "A" = our B and "B" = our A.
  const cublasOperation_t op_first = b.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = a.transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof op_first));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof op_second));
  cublasLtEpilogue_t lt_epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  if (epilogue == MatmulEpilogue::Bias)
    lt_epilogue = CUBLASLT_EPILOGUE_BIAS;
  if (epilogue == MatmulEpilogue::GeluBias)
    lt_epilogue = CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &lt_epilogue, sizeof lt_epilogue));
  if (epilogue != MatmulEpilogue::None) {
    const cudaDataType_t bias_type = bias_bf16 ? CUDA_R_16BF : CUDA_R_32F;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type));
  }
  if (epilogue == MatmulEpilogue::GeluBias) {
    const int64_t aux_ld = n; // pre_gelu (m, n) row-major = (n, m) column-major
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &pre_gelu, sizeof pre_gelu));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof aux_ld));
  }
  // Stored shapes, column-major: our B (k, n) row-major is (n, k) column-major, transposed if stored (n, k).
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la, ab_type, static_cast<uint64_t>(b.transpose ? k : n),
                                          static_cast<uint64_t>(b.transpose ? n : k), b.ld));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb, ab_type, static_cast<uint64_t>(a.transpose ? m : k),
                                          static_cast<uint64_t>(a.transpose ? k : m), a.ld));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lc, c_type, static_cast<uint64_t>(n), static_cast<uint64_t>(m), c.ld));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    for (auto [layout, stride] :
         {std::pair{la, b.batch_stride}, std::pair{lb, a.batch_stride}, std::pair{lc, c.batch_stride}}) {
      CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
      CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                    sizeof stride));
    }
  }
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &ctx.workspace_bytes, sizeof ctx.workspace_bytes));
  const uint32_t align_first = alignment_of(b.p, (batch > 1 ? b.batch_stride : 0) * ab_bytes);
  const uint32_t align_second = alignment_of(a.p, (batch > 1 ? a.batch_stride : 0) * ab_bytes);
  const uint32_t align_c = alignment_of(c.p, (batch > 1 ? c.batch_stride : 0) * c_bytes);
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_first,
                                                    sizeof align_first));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_second,
                                                    sizeof align_second));
  CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof align_c));
  CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c, sizeof align_c));
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(ctx.handle, desc, la, lb, lc, lc, pref, 1, &heuristic, &found));
  if (found == 0) {
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatmulDescDestroy(desc);
    throw std::runtime_error("matmul: cuBLASLt has no algorithm for m=" + std::to_string(m) +
                             " n=" + std::to_string(n) + " k=" + std::to_string(k) + " batch=" + std::to_string(batch));
  }
  CUBLAS_CHECK(cublasLtMatmul(ctx.handle, desc, &alpha, b.p, la, a.p, lb, &beta, c.p, lc, c.p, lc, &heuristic.algo,
                              ctx.workspace, ctx.workspace_bytes, stream));
  CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(lc));
  CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(lb));
  CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(la));
  CUBLAS_CHECK(cublasLtMatmulDescDestroy(desc));
}

inline void* scratch(MatmulContext& ctx, size_t bytes)
{
  if (bytes > ctx.scratch_bytes) {
    if (ctx.scratch != nullptr)
      CUDA_CHECK(cudaFree(ctx.scratch));
    ctx.scratch = nullptr;
    CUDA_CHECK(cudaMalloc(&ctx.scratch, bytes));
    ctx.scratch_bytes = bytes;
  }
  return ctx.scratch;
}

} // namespace detail

// c (batch x (m, n)) = alpha op(a) op(b) + beta c, each product of bf16 operands summed over k in fp32.
// a: op(a) (m, k), stored (m, k) or, transposed, (k, m); b: op(b) (k, n), stored (k, n) or (n, k).
// An fp32 operand is rounded to bf16 into dense scratch first (one elementwise pass over it).
// REQUIRES: beta = 0 when c is bf16; an epilogue only with bf16 operands and beta = 0.
inline void matmul_forward(MatmulContext& ctx, MatmulOutput c, MatmulOperand a, MatmulOperand b, int64_t m, int64_t n,
                           int64_t k, int64_t batch, float alpha, float beta, cudaStream_t stream,
                           MatmulEpilogue epilogue = MatmulEpilogue::None, const void* bias = nullptr,
                           bool bias_bf16 = true, void* pre_gelu = nullptr)
{
  if (m == 0 || n == 0 || batch == 0)
    return;
  if (c.bf16 && beta != 0.0f)
    throw std::logic_error("matmul_forward: a bf16 output needs beta = 0");
  if (epilogue != MatmulEpilogue::None && (!a.bf16 || !b.bf16))
    throw std::logic_error("matmul_forward: epilogues need bf16 operands");
  // Stored (rows, cols) of an operand: op(x) (r, cc), transposed when stored (cc, r).
  const auto rows_of = [](const MatmulOperand& o, int64_t r, int64_t cc) { return o.transpose ? cc : r; };
  const auto cols_of = [](const MatmulOperand& o, int64_t r, int64_t cc) { return o.transpose ? r : cc; };
  const size_t a_elements = a.bf16 ? 0 : static_cast<size_t>(batch * m * k);
  const size_t b_elements = b.bf16 ? 0 : static_cast<size_t>(batch * k * n);
  if (a_elements + b_elements > 0) {
    // 256-byte aligned halves, so the rounded operands meet cuBLASLt's best alignment.
    const size_t a_bytes = (a_elements * 2 + 255) / 256 * 256;
    auto* base = static_cast<char*>(detail::scratch(ctx, a_bytes + b_elements * 2));
    const auto round = [&](MatmulOperand& o, int64_t r, int64_t cc, size_t elements, void* out) {
      const int64_t rows = rows_of(o, r, cc), cols = cols_of(o, r, cc);
      round_to_bf16_kernel<<<grid_for(elements, 256), 256, 0, stream>>>(
          static_cast<__nv_bfloat16*>(out), static_cast<const float*>(o.p), rows, cols, o.ld, o.batch_stride, batch);
      CUDA_CHECK(cudaGetLastError());
      o = MatmulOperand{out, true, cols, rows * cols, o.transpose};
    };
    if (a_elements > 0)
      round(a, m, k, a_elements, base);
    if (b_elements > 0)
      round(b, k, n, b_elements, base + a_bytes);
  }
  detail::lt_matmul(ctx, c, a, b, m, n, k, batch, alpha, beta, epilogue, bias, bias_bf16, pre_gelu, stream);
}

} // namespace gputwin::engine::cuda
