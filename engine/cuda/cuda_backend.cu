// The CUDA backend: each Backend call runs one operator of cuda/ops/ on the backend's stream inside an NVTX
// range named like the op, on device tensors in place (asynchronously); host tensors are staged through
// device buffers and copied back (see cuda_backend.hpp). This file: its life cycle, streams, events and ranges;
// the operators are in the other cuda_*.cu files (cuda_backend_impl.cuh lists them).
#include "cuda/cuda_backend_impl.cuh"

#include "cuda/device_query.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace gputwin::engine {

using namespace cuda_detail;

std::string cuda_backend_unavailable_reason()
{
  std::vector<CudaDeviceInfo> devices;
  try {
    devices = query_cuda_devices();
  } catch (const CudaError& e) {
    return std::string(cudaGetErrorName(e.code())) + ": " + cudaGetErrorString(e.code());
  }
  if (devices.empty())
    return "no CUDA device is visible";
  if (devices.front().compute_major < 8)
    return "GPU 0 (" + devices.front().name + ") is sm_" + std::to_string(devices.front().compute_major) +
           std::to_string(devices.front().compute_minor) + "; the CUDA backend needs sm_80 or newer (bf16)";
  return "";
}


CudaBackend::CudaBackend(int device) : impl_(std::make_unique<Impl>())
{
  impl_->device = device;
  CUDA_CHECK(cudaSetDevice(device));
  CUDA_CHECK(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithFlags(&impl_->comm_stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreateWithFlags(&impl_->compute_done, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventCreateWithFlags(&impl_->comm_done, cudaEventDisableTiming));
  CUBLAS_CHECK(cublasLtCreate(&impl_->matmul.handle));
  CUDA_CHECK(cudaMalloc(&impl_->matmul.workspace, impl_->matmul.workspace_bytes));
  // Keep freed tensor memory in the pool (no release to the OS at every synchronization).
  cudaMemPool_t pool = nullptr;
  CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  uint64_t threshold = UINT64_MAX;
  CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  impl_->allocator = std::make_unique<CudaAllocator>(device, impl_->stream);
  impl_->buffer_ops = std::make_unique<CudaBufferOps>(device, impl_->stream, impl_->comm_stream);
  impl_->clock = std::make_unique<CudaEventClock>(device, impl_->stream, impl_->comm_stream);
}

CudaBackend::~CudaBackend()
{
  // Destructors must not throw: release what was created and ignore a failing driver at exit.
  impl_->buffer_ops.reset(); // frees its scratch on the communication stream
  impl_->clock.reset();
  cudaSetDevice(impl_->device);
  for (cudaStream_t s : {impl_->stream, impl_->comm_stream})
    if (s != nullptr)
      cudaStreamSynchronize(s);
  for (const Impl::Buffer& b : impl_->buffers)
    cudaFree(b.p);
  cudaFree(impl_->scratch);
  cudaFree(impl_->matmul.scratch);
  cudaFree(impl_->matmul.workspace);
  if (impl_->matmul.handle != nullptr)
    cublasLtDestroy(impl_->matmul.handle);
  for (cudaEvent_t e : {impl_->compute_done, impl_->comm_done})
    if (e != nullptr)
      cudaEventDestroy(e);
  for (cudaStream_t s : {impl_->stream, impl_->comm_stream})
    if (s != nullptr)
      cudaStreamDestroy(s);
}

void CudaBackend::communication_waits_for_compute()
{
  CUDA_CHECK(cudaSetDevice(impl_->device));
  CUDA_CHECK(cudaEventRecord(impl_->compute_done, impl_->stream));
  CUDA_CHECK(cudaStreamWaitEvent(impl_->comm_stream, impl_->compute_done, 0));
}

void CudaBackend::compute_waits_for_communication()
{
  CUDA_CHECK(cudaSetDevice(impl_->device));
  CUDA_CHECK(cudaEventRecord(impl_->comm_done, impl_->comm_stream));
  CUDA_CHECK(cudaStreamWaitEvent(impl_->stream, impl_->comm_done, 0));
}

OpClock* CudaBackend::op_clock()
{
  return impl_->clock.get();
}

void CudaBackend::begin_range(const std::string& name)
{
  nvtxRangePushA(name.c_str());
}

void CudaBackend::end_range()
{
  nvtxRangePop();
}

void* CudaBackend::communication_stream_handle() const
{
  return impl_->comm_stream;
}

DeviceAllocator* CudaBackend::allocator()
{
  return impl_->allocator.get();
}

BufferOps* CudaBackend::buffer_ops()
{
  return impl_->buffer_ops.get();
}


void CudaBackend::synchronize()
{
  CUDA_CHECK(cudaSetDevice(impl_->device));
  CUDA_CHECK(cudaStreamSynchronize(impl_->comm_stream));
  CUDA_CHECK(cudaStreamSynchronize(impl_->stream));
}

std::string CudaBackend::gpu_name() const
{
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, impl_->device));
  return prop.name;
}


std::unique_ptr<Backend> make_cuda_backend()
{
  return std::make_unique<CudaBackend>(0);
}

} // namespace gputwin::engine
