// The CUDA backend's data movement: uploads, downloads and copies of tensors, and the in-process
// communicator's device reduction over the peers' buffers.
#include "cuda/cuda_backend_impl.cuh"

#include "cuda/ops/collective.cuh"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace gputwin::engine {

using namespace cuda_detail;

void CudaBufferOps::reduce(void* dst, const std::vector<const void*>& src, int64_t offset, int64_t count, DType dtype,
                           ReduceOp op)
{
  if (dtype != DType::F32 && dtype != DType::BF16)
    throw std::logic_error("CudaBufferOps::reduce: expected f32 or bf16 elements, got " + to_string(dtype));
  CUDA_CHECK(cudaSetDevice(device_));
  cuda::member_reduce(dst, src.data(), static_cast<int>(src.size()), dtype == DType::BF16, offset, count,
                      op == ReduceOp::Max, stream_);
}

namespace {
void check_bytes(const char* what, const Tensor& t, int64_t bytes)
{
  if (bytes < 0 || bytes > t.bytes())
    throw std::logic_error(std::string(what) + ": " + std::to_string(bytes) + " bytes of " + t.describe());
}
} // namespace

void CudaBackend::upload(const Tensor& dst, const void* host, int64_t bytes)
{
  check_bytes("upload", dst, bytes);
  if (bytes == 0)
    return;
  if (dst.device() != Device::Cuda) {
    std::memcpy(dst.raw(), host, static_cast<size_t>(bytes));
    return;
  }
  cuda::NvtxRange range("upload");
  CUDA_CHECK(cudaSetDevice(impl_->device));
  CUDA_CHECK(cudaMemcpyAsync(dst.raw(), host, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, impl_->stream));
  CUDA_CHECK(cudaStreamSynchronize(impl_->stream)); // the host buffer may go away on return
}

void CudaBackend::download(void* host, const Tensor& src, int64_t bytes)
{
  check_bytes("download", src, bytes);
  if (bytes == 0)
    return;
  if (src.device() != Device::Cuda) {
    std::memcpy(host, src.raw(), static_cast<size_t>(bytes));
    return;
  }
  cuda::NvtxRange range("download");
  CUDA_CHECK(cudaSetDevice(impl_->device));
  CUDA_CHECK(cudaMemcpyAsync(host, src.raw(), static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, impl_->stream));
  CUDA_CHECK(cudaStreamSynchronize(impl_->stream));
}

void CudaBackend::copy_bytes(const Tensor& dst, const Tensor& src, int64_t bytes)
{
  check_bytes("copy_bytes", dst, bytes);
  check_bytes("copy_bytes", src, bytes);
  if (bytes == 0 || dst.raw() == src.raw())
    return;
  Call call(*impl_, "copy_bytes");
  const void* from = call.in(src);
  void* to = call.out(dst, true); // a staged host dst keeps its bytes past `bytes`
  CUDA_CHECK(cudaMemcpyAsync(to, from, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, call.stream()));
  call.finish();
}

} // namespace gputwin::engine
