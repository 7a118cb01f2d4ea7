// GPU test (ctest label `gpu`): lists the CUDA devices. Skipped, saying why, where no GPU can be used.
#include "cuda/device_query.hpp"

#include <gtest/gtest.h>

namespace gputwin::engine {
namespace {

TEST(CudaDevice, QueriesEveryDevice)
{
  std::vector<CudaDeviceInfo> devices;
  try {
    devices = query_cuda_devices();
  } catch (const std::exception& e) {
    GTEST_SKIP() << "no usable CUDA device on this machine: " << e.what();
  }
  if (devices.empty())
    GTEST_SKIP() << "no CUDA device on this machine";
  for (const CudaDeviceInfo& d : devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GE(d.compute_major, 8) << "gputwin builds for sm_80 and sm_90";
    EXPECT_GT(d.memory_bytes, 0);
    EXPECT_GT(d.multiprocessors, 0);
  }
}

} // namespace
} // namespace gputwin::engine
