// The CUDA backend's per-layer operators besides GEMMs and attention: LayerNorm, RMSNorm, rotary embedding,
// SwiGLU, GeLU, dropout, the vocabulary-parallel embedding.
#include "cuda/cuda_backend_impl.cuh"

#include "cuda/ops/dropout.cuh"
#include "cuda/ops/embedding.cuh"
#include "cuda/ops/gelu.cuh"
#include "cuda/ops/layernorm.cuh"
#include "cuda/ops/rmsnorm.cuh"
#include "cuda/ops/rope.cuh"
#include "cuda/ops/squared_relu.cuh"
#include "cuda/ops/swiglu.cuh"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace gputwin::engine {

using namespace cuda_detail;

void CudaBackend::layernorm_forward(Tensor& out, const Tensor& in, const Tensor& gamma, const Tensor& beta,
                                    int64_t rows, int64_t cols, float eps)
{
  require("layernorm_forward in", in, rows * cols);
  require("layernorm_forward out", out, rows * cols);
  require("layernorm_forward gamma", gamma, cols);
  require("layernorm_forward beta", beta, cols);
  Call call(*impl_, "layernorm_forward");
  cuda::layernorm_forward(call.fout(out), call.fin(in), call.fin(gamma), call.fin(beta), rows, cols, eps,
                          call.stream());
  call.finish();
}

void CudaBackend::layernorm_backward(Tensor& d_in, Tensor& d_gamma, Tensor& d_beta, const Tensor& d_out,
                                     const Tensor& in, const Tensor& gamma, int64_t rows, int64_t cols, float eps)
{
  require("layernorm_backward in", in, rows * cols);
  require("layernorm_backward d_out", d_out, rows * cols);
  require("layernorm_backward d_in", d_in, rows * cols);
  require("layernorm_backward d_gamma", d_gamma, cols);
  require("layernorm_backward d_beta", d_beta, cols);
  Call call(*impl_, "layernorm_backward");
  float* scratch = impl_->scratch_of(cuda::layernorm_backward_scratch_floats(rows));
  cuda::layernorm_backward(call.fout(d_in), call.f32out(d_gamma, true), call.f32out(d_beta, true), call.fin(d_out),
                           call.fin(in), call.fin(gamma), rows, cols, eps, scratch, call.stream());
  call.finish();
}

void CudaBackend::rmsnorm_forward(Tensor& out, const Tensor& in, const Tensor& gamma, int64_t rows, int64_t cols,
                                  float eps)
{
  require("rmsnorm_forward in", in, rows * cols);
  require("rmsnorm_forward out", out, rows * cols);
  require("rmsnorm_forward gamma", gamma, cols);
  Call call(*impl_, "rmsnorm_forward");
  cuda::rmsnorm_forward(call.fout(out), call.fin(in), call.fin(gamma), rows, cols, eps, call.stream());
  call.finish();
}

void CudaBackend::rmsnorm_backward(Tensor& d_in, Tensor& d_gamma, const Tensor& d_out, const Tensor& in,
                                   const Tensor& gamma, int64_t rows, int64_t cols, float eps)
{
  require("rmsnorm_backward in", in, rows * cols);
  require("rmsnorm_backward d_out", d_out, rows * cols);
  require("rmsnorm_backward d_in", d_in, rows * cols);
  require("rmsnorm_backward d_gamma", d_gamma, cols);
  Call call(*impl_, "rmsnorm_backward");
  float* scratch = impl_->scratch_of(cuda::rmsnorm_backward_scratch_floats(rows));
  cuda::rmsnorm_backward(call.fout(d_in), call.f32out(d_gamma, true), call.fin(d_out), call.fin(in), call.fin(gamma),
                         rows, cols, eps, scratch, call.stream());
  call.finish();
}

namespace {

cuda::RopeShape rope_shape_of(const RopeDims& r)
{
  const AttentionDims& d = r.attention;
  if (d.head_dim % 2 != 0)
    throw std::logic_error("rope: head_dim " + std::to_string(d.head_dim) + " is odd");
  return cuda::RopeShape{d.seq, d.batch, d.heads, d.groups(), d.head_dim, r.first_position, r.base};
}

} // namespace

void CudaBackend::rope_forward(Tensor& qkv, const RopeDims& dims)
{
  const AttentionDims& d = dims.attention;
  require("rope_forward qkv", qkv, d.seq * d.batch * d.qkv_width());
  Call call(*impl_, "rope_forward");
  cuda::rope(call.fout(qkv, true), rope_shape_of(dims), 1.0f, call.stream());
  call.finish();
}

void CudaBackend::rope_backward(Tensor& d_qkv, const RopeDims& dims)
{
  const AttentionDims& d = dims.attention;
  require("rope_backward d_qkv", d_qkv, d.seq * d.batch * d.qkv_width());
  Call call(*impl_, "rope_backward");
  cuda::rope(call.fout(d_qkv, true), rope_shape_of(dims), -1.0f, call.stream());
  call.finish();
}

void CudaBackend::swiglu_forward(Tensor& out, const Tensor& in, int64_t rows, int64_t cols)
{
  require("swiglu_forward in", in, rows * 2 * cols);
  require("swiglu_forward out", out, rows * cols);
  Call call(*impl_, "swiglu_forward");
  cuda::swiglu_forward(call.fout(out), call.fin(in), rows, cols, call.stream());
  call.finish();
}

void CudaBackend::swiglu_backward(Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t rows, int64_t cols)
{
  require("swiglu_backward in", in, rows * 2 * cols);
  require("swiglu_backward d_out", d_out, rows * cols);
  require("swiglu_backward d_in", d_in, rows * 2 * cols);
  Call call(*impl_, "swiglu_backward");
  cuda::swiglu_backward(call.fout(d_in), call.fin(d_out), call.fin(in), rows, cols, call.stream());
  call.finish();
}

void CudaBackend::gelu_forward(Tensor& out, const Tensor& in, int64_t n)
{
  require("gelu_forward in", in, n);
  require("gelu_forward out", out, n);
  Call call(*impl_, "gelu_forward");
  cuda::gelu_forward(call.fout(out), call.fin(in), n, call.stream());
  call.finish();
}

void CudaBackend::gelu_backward(Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t n)
{
  require("gelu_backward in", in, n);
  require("gelu_backward d_out", d_out, n);
  require("gelu_backward d_in", d_in, n);
  Call call(*impl_, "gelu_backward");
  cuda::gelu_backward(call.fout(d_in), call.fin(d_out), call.fin(in), n, call.stream());
  call.finish();
}

void CudaBackend::squared_relu_forward(Tensor& out, const Tensor& in, int64_t n)
{
  require("squared_relu_forward in", in, n);
  require("squared_relu_forward out", out, n);
  Call call(*impl_, "squared_relu_forward");
  cuda::squared_relu_forward(call.fout(out), call.fin(in), n, call.stream());
  call.finish();
}

void CudaBackend::squared_relu_backward(Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t n)
{
  require("squared_relu_backward in", in, n);
  require("squared_relu_backward d_out", d_out, n);
  require("squared_relu_backward d_in", d_in, n);
  Call call(*impl_, "squared_relu_backward");
  cuda::squared_relu_backward(call.fout(d_in), call.fin(d_out), call.fin(in), n, call.stream());
  call.finish();
}


void CudaBackend::dropout_forward(Tensor& out, Tensor& mask, const Tensor& in, const DropoutSite& site)
{
  const auto& l = site.local_dims;
  const int64_t n = l[0] * l[1] * l[2] * l[3];
  require("dropout_forward in", in, n);
  require("dropout_forward out", out, n);
  require("dropout_forward mask", mask, n);
  if (mask.dtype() != DType::U8)
    throw std::logic_error("dropout_forward: the mask must be u8, got " + mask.describe());
  cuda::DropoutBlock blk{};
  for (size_t d = 0; d < 4; ++d) {
    if (site.offsets[d] + l[d] > site.global_dims[d])
      throw std::logic_error("dropout_forward: local block outside the logical tensor");
    blk.local[d] = l[d];
    blk.offset[d] = site.offsets[d];
    blk.global[d] = site.global_dims[d];
  }
  if (n == 0)
    return;
  Call call(*impl_, "dropout_forward");
  cuda::dropout_forward(call.fout(out), static_cast<uint8_t*>(call.out(mask)), call.fin(in), site.key, site.probability,
                        blk, call.stream());
  call.finish();
}

void CudaBackend::dropout_backward(Tensor& d_in, const Tensor& d_out, const Tensor& mask, float probability)
{
  const int64_t n = mask.numel();
  require("dropout_backward d_out", d_out, n);
  require("dropout_backward d_in", d_in, n);
  if (n == 0)
    return;
  Call call(*impl_, "dropout_backward");
  cuda::dropout_backward(call.fout(d_in), call.fin(d_out), static_cast<const uint8_t*>(call.in(mask)), n, probability,
                         call.stream());
  call.finish();
}

void CudaBackend::embedding_forward(Tensor& out, const Tensor& tokens, const Tensor& table, int64_t vocab_start,
                                    int64_t owned_rows, int64_t n, int64_t h)
{
  require("embedding_forward tokens", tokens, n);
  require("embedding_forward out", out, n * h);
  require("embedding_forward table", table, owned_rows * h);
  Call call(*impl_, "embedding_forward");
  cuda::embedding_forward(call.fout(out), call.i32in(tokens), call.fin(table), vocab_start, owned_rows, n, h,
                          call.stream());
  call.finish();
}

void CudaBackend::embedding_backward(Tensor& d_table, const Tensor& d_out, const Tensor& tokens, int64_t vocab_start,
                                     int64_t owned_rows, int64_t n, int64_t h)
{
  require("embedding_backward tokens", tokens, n);
  require("embedding_backward d_out", d_out, n * h);
  require("embedding_backward d_table", d_table, owned_rows * h);
  Call call(*impl_, "embedding_backward");
  cuda::embedding_backward(call.f32out(d_table, true), call.fin(d_out), call.i32in(tokens), vocab_start, owned_rows, n,
                           h, call.stream());
  call.finish();
}

} // namespace gputwin::engine
