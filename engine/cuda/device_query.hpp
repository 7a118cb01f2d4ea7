#pragma once
// What the engine needs to know about the GPUs of this machine: for the "no GPU" error, the device name and
// clocks recorded in trace metadata, and the memory check before a plan is allocated.

#include <cstdint>
#include <string>
#include <vector>

namespace gputwin::engine {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;            // "NVIDIA H100 80GB HBM3"
  int compute_major = 0;       // 8 = Ampere, 9 = Hopper
  int compute_minor = 0;
  int multiprocessors = 0;
  int64_t memory_bytes = 0;    // total global memory
  int64_t sm_clock_khz = 0;    // peak SM clock
  int64_t memory_clock_khz = 0;
  int memory_bus_bits = 0;
};

// All visible CUDA devices. Throws CudaError with the runtime's message when there is no usable GPU or driver
// (e.g. "cudaGetDeviceCount failed: cudaErrorInsufficientDriver").
std::vector<CudaDeviceInfo> query_cuda_devices();

// Free global memory of GPU `index` now (cudaMemGetInfo; creates the device's context).
int64_t cuda_free_memory_bytes(int index);

} // namespace gputwin::engine
