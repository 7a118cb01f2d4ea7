#pragma once
// Every CUDA runtime call goes through CUDA_CHECK, which turns a failure into an exception that names the
// call, the file and the line (llm.c's cudaCheck, nccl-tests' CUDACHECK).

#include <cuda_runtime.h>

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
  throw CudaError(code, std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                            cudaGetErrorName(code) + " (" + cudaGetErrorString(code) + ")");
}

} // namespace gputwin::engine

#define CUDA_CHECK(call)                                                                                      \
  do {                                                                                                        \
    const cudaError_t gputwin_cuda_status_ = (call);                                                          \
    if (gputwin_cuda_status_ != cudaSuccess)                                                                  \
      ::gputwin::engine::throw_cuda_error(gputwin_cuda_status_, #call, __FILE__, __LINE__);                   \
  } while (0)
