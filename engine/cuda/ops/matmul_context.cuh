#pragma once
// The state of the CUDA backend's GEMMs (matmul.cuh), apart from the kernels so that the backend's state
// (cuda_backend_impl.cuh) can hold it in every file of the backend: cuda/ops headers with kernels are each
// included by one .cu file only.

#include <cublasLt.h>

#include <cstddef>

namespace gputwin::engine::cuda {

// The cuBLASLt handle and workspace of one stream (32 MiB: what cuBLASLt asks for on Hopper).
struct MatmulContext {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 32u << 20;
  // bf16 copies of fp32 operands (grown on demand, freed with the context).
  void* scratch = nullptr;
  size_t scratch_bytes = 0;
};

} // namespace gputwin::engine::cuda
