// The CUDA backend's loss and optimizer: the vocabulary-parallel cross-entropy and the Adam step.
#include "cuda/cuda_backend_impl.cuh"

#include "cuda/ops/adam.cuh"
#include "cuda/ops/cross_entropy.cuh"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace gputwin::engine {

using namespace cuda_detail;

void CudaBackend::cross_entropy_local_max(Tensor& row_max, const Tensor& logits, int64_t rows, int64_t cols,
                                          int64_t valid_cols)
{
  require("cross_entropy_local_max logits", logits, rows * cols);
  require("cross_entropy_local_max row_max", row_max, rows);
  Call call(*impl_, "cross_entropy_local_max");
  cuda::cross_entropy_local_max(call.f32out(row_max, false), call.f32in(logits), rows, cols, valid_cols, call.stream());
  call.finish();
}

void CudaBackend::cross_entropy_local_sums(Tensor& sum_exp, Tensor& target_logit, const Tensor& logits,
                                           const Tensor& targets, const Tensor& row_max, int64_t rows, int64_t cols,
                                           int64_t valid_cols, int64_t vocab_start)
{
  require("cross_entropy_local_sums logits", logits, rows * cols);
  require("cross_entropy_local_sums targets", targets, rows);
  Call call(*impl_, "cross_entropy_local_sums");
  cuda::cross_entropy_local_sums(call.f32out(sum_exp, false), call.f32out(target_logit, false), call.f32in(logits),
                                 call.i32in(targets), call.f32in(row_max), rows, cols, valid_cols, vocab_start,
                                 call.stream());
  call.finish();
}

void CudaBackend::cross_entropy_backward(Tensor& d_logits, const Tensor& logits, const Tensor& targets,
                                         const Tensor& row_max, const Tensor& sum_exp, int64_t rows, int64_t cols,
                                         int64_t valid_cols, int64_t vocab_start, float scale)
{
  require("cross_entropy_backward logits", logits, rows * cols);
  require("cross_entropy_backward d_logits", d_logits, rows * cols);
  Call call(*impl_, "cross_entropy_backward");
  cuda::cross_entropy_backward(call.f32out(d_logits, false), call.f32in(logits), call.i32in(targets),
                               call.f32in(row_max), call.f32in(sum_exp), rows, cols, valid_cols, vocab_start, scale,
                               call.stream());
  call.finish();
}

void CudaBackend::adam_step(Tensor& master, Tensor& momentum, Tensor& variance, const Tensor& grad, int64_t n,
                            const AdamHyper& hyper, int64_t step)
{
  require("adam_step master", master, n);
  require("adam_step momentum", momentum, n);
  require("adam_step variance", variance, n);
  require("adam_step grad", grad, n);
  Call call(*impl_, "adam_step");
  cuda::adam_update(call.f32out(master, true), call.f32out(momentum, true), call.f32out(variance, true),
                    call.f32in(grad), n, hyper.learning_rate, hyper.beta1, hyper.beta2, hyper.epsilon,
                    hyper.weight_decay, step, call.stream());
  call.finish();
}

} // namespace gputwin::engine
