// The CUDA backend's elementwise operators: sums, bias add and its gradient, copies, accumulation, zeroing.
#include "cuda/cuda_backend_impl.cuh"

#include "cuda/ops/elementwise.cuh"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace gputwin::engine {

using namespace cuda_detail;

void CudaBackend::add(Tensor& out, const Tensor& a, const Tensor& b, int64_t n)
{
  require("add a", a, n);
  require("add b", b, n);
  require("add out", out, n);
  Call call(*impl_, "add");
  cuda::add_forward(call.fout(out), call.fin(a), call.fin(b), n, call.stream());
  call.finish();
}

void CudaBackend::add_bias(Tensor& out, const Tensor& in, const Tensor& bias, int64_t rows, int64_t cols)
{
  require("add_bias in", in, rows * cols);
  require("add_bias out", out, rows * cols);
  require("add_bias bias", bias, cols);
  Call call(*impl_, "add_bias");
  cuda::add_bias_forward(call.fout(out), call.fin(in), call.fin(bias), rows, cols, call.stream());
  call.finish();
}

void CudaBackend::bias_backward(Tensor& d_bias, const Tensor& d_out, int64_t rows, int64_t cols)
{
  require("bias_backward d_out", d_out, rows * cols);
  require("bias_backward d_bias", d_bias, cols);
  Call call(*impl_, "bias_backward");
  cuda::bias_backward(call.f32out(d_bias, true), call.fin(d_out), rows, cols, call.stream());
  call.finish();
}

void CudaBackend::copy(Tensor& out, const Tensor& in, int64_t n)
{
  require("copy in", in, n);
  require("copy out", out, n);
  Call call(*impl_, "copy");
  cuda::convert(call.fout(out), call.fin(in), n, call.stream());
  call.finish();
}

void CudaBackend::accumulate(Tensor& out, const Tensor& in, int64_t n)
{
  require("accumulate in", in, n);
  require("accumulate out", out, n);
  Call call(*impl_, "accumulate");
  cuda::accumulate(call.f32out(out, true), call.fin(in), n, call.stream());
  call.finish();
}

void CudaBackend::zero(Tensor& t)
{
  if (!t.defined())
    return;
  Call call(*impl_, "zero");
  CUDA_CHECK(cudaMemsetAsync(call.out(t), 0, static_cast<size_t>(t.bytes()), call.stream()));
  call.finish();
}

} // namespace gputwin::engine
