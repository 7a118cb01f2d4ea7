#pragma once
// Every CUDA runtime call goes through CUDA_CHECK, every cuBLAS(Lt) call through CUBLAS_CHECK and every NCCL
// call through NCCL_CHECK: a failure becomes an exception that names the call, the file and the line (llm.c's
// cudaCheck/cublasCheck, nccl-tests' CUDACHECK/NCCLCHECK). NCCL_CHECK exists where nccl.h is found.

#include <cublasLt.h>
#include <cuda_runtime.h>
#if __has_include(<nccl.h>)
#include <nccl.h>
#define GPUTWIN_HAVE_NCCL_HEADER 1
#endif

#include <stdexcept>
#include <string>

namespace gputwin::engine {

class CudaError : public std::runtime_error {
public:
  CudaError(cudaError_t code, const std::string& message) : std::runtime_error(message), code_(code) {}
  cudaError_t code() const { return code_; }

private:
  cudaError_t code_;
};

[[noreturn]] inline void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line)
{
  throw CudaError(code, std::string(file) + ":" + std::to_string(line) + ": " + call +
                            " failed: " + cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")");
}

[[noreturn]] inline void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line)
{
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call +
                           " failed: " + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")");
}

#ifdef GPUTWIN_HAVE_NCCL_HEADER
[[noreturn]] inline void throw_nccl_error(ncclResult_t result, const char* call, const char* file, int line)
{
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + call +
                           " failed: " + ncclGetErrorString(result));
}
#endif

} // namespace gputwin::engine

#define CUBLAS_CHECK(call)                                                                                             \
  do {                                                                                                                 \
    const cublasStatus_t gputwin_cublas_status_ = (call);                                                              \
    if (gputwin_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                                               \
      ::gputwin::engine::throw_cublas_error(gputwin_cublas_status_, #call, __FILE__, __LINE__);                        \
  } while (0)

#ifdef GPUTWIN_HAVE_NCCL_HEADER
#define NCCL_CHECK(call)                                                                                               \
  do {                                                                                                                 \
    const ncclResult_t gputwin_nccl_status_ = (call);                                                                  \
    if (gputwin_nccl_status_ != ncclSuccess)                                                                           \
      ::gputwin::engine::throw_nccl_error(gputwin_nccl_status_, #call, __FILE__, __LINE__);                            \
  } while (0)
#endif

#define CUDA_CHECK(call)                                                                                               \
  do {                                                                                                                 \
    const cudaError_t gputwin_cuda_status_ = (call);                                                                   \
    if (gputwin_cuda_status_ != cudaSuccess)                                                                           \
      ::gputwin::engine::throw_cuda_error(gputwin_cuda_status_, #call, __FILE__, __LINE__);                            \
  } while (0)
