#pragma once
// Adam (Kingma & Ba 2015, Algorithm 1, bias-corrected) with decoupled weight decay (Loshchilov & Hutter 2019)
// on fp32 master weights and states.

#include "cuda/ops/common.cuh"

#include <cmath>

namespace gputwin::engine::cuda {

__global__ void adam_kernel(float* master, float* m, float* v, const float* grad, int64_t n, float lr, float beta1,
                            float beta2, float eps, float weight_decay, float correction1, float correction2)
{
  // master, m, v, grad (n)
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < static_cast<size_t>(n);
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const float g = grad[i];
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    const float m_hat = mi / correction1, v_hat = vi / correction2;
    master[i] -= lr * (m_hat / (sqrtf(v_hat) + eps) + weight_decay * master[i]);
  }
}

// One Adam step on n weights; `step` counts from 1 (the bias corrections 1 - beta^step).
inline void adam_update(float* master, float* m, float* v, const float* grad, int64_t n, float lr, float beta1,
                        float beta2, float eps, float weight_decay, int64_t step, cudaStream_t stream)
{
  const float correction1 = 1.0f - std::pow(beta1, static_cast<float>(step));
  const float correction2 = 1.0f - std::pow(beta2, static_cast<float>(step));
  adam_kernel<<<grid_for(static_cast<size_t>(n), 256), 256, 0, stream>>>(master, m, v, grad, n, lr, beta1, beta2, eps,
                                                                         weight_decay, correction1, correction2);
  CUDA_CHECK(cudaGetLastError());
}

} // namespace gputwin::engine::cuda
