// The CUDA backend's GEMMs (cuBLASLt) and the unfused attention core (scores, causal softmax, context).
#include "cuda/cuda_backend_impl.cuh"

#include "cuda/ops/attention.cuh"
#include "cuda/ops/matmul.cuh"
#include "cuda/ops/softmax.cuh"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace gputwin::engine {

using namespace cuda_detail;

namespace {

cuda::AttentionShape shape_of(const AttentionDims& d)
{
  return cuda::AttentionShape{d.batch, d.heads, d.seq, d.head_dim, d.groups()};
}

void check_attention(const char* kernel, const Tensor& qkv, const Tensor& scores, const AttentionDims& d)
{
  require(kernel, qkv, d.seq * d.batch * d.qkv_width());
  require(kernel, scores, d.batch * d.heads * d.seq * d.seq);
}

} // namespace

void CudaBackend::gemm(Tensor& c, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, int64_t m,
                       int64_t n, int64_t k, float alpha, float beta)
{
  require("gemm a", a, m * k);
  require("gemm b", b, k * n);
  require("gemm c", c, m * n);
  if (c.dtype() == DType::BF16 && beta != 0.0f)
    throw std::logic_error("gemm: a bf16 C needs beta = 0");
  Call call(*impl_, "gemm");
  const cuda::ConstFloatPtr pa = call.fin(a), pb = call.fin(b);
  const cuda::FloatPtr pc = call.fout(c, beta != 0.0f);
  const cuda::MatmulOperand oa{pa.p, pa.bf16, transpose_a ? m : k, 0, transpose_a};
  const cuda::MatmulOperand ob{pb.p, pb.bf16, transpose_b ? k : n, 0, transpose_b};
  cuda::matmul_forward(impl_->matmul, cuda::MatmulOutput{pc.p, pc.bf16, n, 0}, oa, ob, m, n, k, 1, alpha, beta,
                       call.stream());
  call.finish();
}


void CudaBackend::attention_scores_forward(Tensor& scores, const Tensor& qkv, const AttentionDims& dims)
{
  check_attention("attention_scores_forward", qkv, scores, dims);
  Call call(*impl_, "attention_scores_forward");
  cuda::attention_scores_forward(impl_->matmul, call.fout(scores), call.fin(qkv), shape_of(dims), call.stream());
  call.finish();
}

void CudaBackend::attention_scores_backward(Tensor& d_qkv, const Tensor& d_scores, const Tensor& qkv,
                                            const AttentionDims& dims)
{
  check_attention("attention_scores_backward", qkv, d_scores, dims);
  check_attention("attention_scores_backward", d_qkv, d_scores, dims);
  Call call(*impl_, "attention_scores_backward");
  // d_qkv is read as well: its V part must come back unchanged.
  cuda::attention_scores_backward(impl_->matmul, call.fout(d_qkv, true), call.fin(d_scores), call.fin(qkv),
                                  shape_of(dims), call.stream());
  call.finish();
}

void CudaBackend::causal_softmax_forward(Tensor& probs, const Tensor& scores, int64_t rows, int64_t seq)
{
  require("causal_softmax_forward scores", scores, rows * seq);
  require("causal_softmax_forward probs", probs, rows * seq);
  Call call(*impl_, "causal_softmax_forward");
  cuda::causal_softmax_forward(call.fout(probs), call.fin(scores), rows, seq, 1.0f, call.stream());
  call.finish();
}

void CudaBackend::causal_softmax_backward(Tensor& d_scores, const Tensor& d_probs, const Tensor& probs, int64_t rows,
                                          int64_t seq)
{
  require("causal_softmax_backward probs", probs, rows * seq);
  require("causal_softmax_backward d_probs", d_probs, rows * seq);
  require("causal_softmax_backward d_scores", d_scores, rows * seq);
  Call call(*impl_, "causal_softmax_backward");
  cuda::causal_softmax_backward(call.fout(d_scores), call.fin(d_probs), call.fin(probs), rows, seq, 1.0f,
                                call.stream());
  call.finish();
}

void CudaBackend::attention_context_forward(Tensor& context, const Tensor& probs, const Tensor& qkv,
                                            const AttentionDims& dims)
{
  check_attention("attention_context_forward", qkv, probs, dims);
  require("attention_context_forward context", context, dims.seq * dims.batch * dims.heads * dims.head_dim);
  Call call(*impl_, "attention_context_forward");
  cuda::attention_context_forward(impl_->matmul, call.fout(context), call.fin(probs), call.fin(qkv), shape_of(dims),
                                  call.stream());
  call.finish();
}

void CudaBackend::attention_context_backward(Tensor& d_probs, Tensor& d_qkv, const Tensor& d_context,
                                             const Tensor& probs, const Tensor& qkv, const AttentionDims& dims)
{
  check_attention("attention_context_backward", qkv, probs, dims);
  check_attention("attention_context_backward", d_qkv, d_probs, dims);
  Call call(*impl_, "attention_context_backward");
  // d_qkv is read as well: its Q and K parts must come back unchanged.
  cuda::attention_context_backward(impl_->matmul, call.fout(d_probs), call.fout(d_qkv, true), call.fin(d_context),
                                   call.fin(probs), call.fin(qkv), shape_of(dims), call.stream());
  call.finish();
}

} // namespace gputwin::engine
