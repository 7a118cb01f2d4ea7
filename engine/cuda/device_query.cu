#include "cuda/cuda_check.hpp"
#include "cuda/device_query.hpp"

namespace gputwin::engine {

std::vector<CudaDeviceInfo> query_cuda_devices()
{
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  std::vector<CudaDeviceInfo> devices;
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, i));
    CudaDeviceInfo d;
    d.index = i;
    d.name = prop.name;
    d.compute_major = prop.major;
    d.compute_minor = prop.minor;
    d.multiprocessors = prop.multiProcessorCount;
    d.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    d.memory_bus_bits = prop.memoryBusWidth;
    // CUDA 13 dropped clockRate/memoryClockRate from cudaDeviceProp: ask for the attributes instead.
    int sm_clock_khz = 0, memory_clock_khz = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sm_clock_khz, cudaDevAttrClockRate, i));
    CUDA_CHECK(cudaDeviceGetAttribute(&memory_clock_khz, cudaDevAttrMemoryClockRate, i));
    d.sm_clock_khz = sm_clock_khz;
    d.memory_clock_khz = memory_clock_khz;
    devices.push_back(d);
  }
  return devices;
}

int64_t cuda_free_memory_bytes(int index)
{
  CUDA_CHECK(cudaSetDevice(index));
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return static_cast<int64_t>(free_bytes);
}

} // namespace gputwin::engine
