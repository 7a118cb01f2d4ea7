#pragma once
// What the CUDA backend's files share (private to engine/cuda): its allocator and the in-process communicator's
// device path, the backend's state (streams, events, cuBLASLt context, staging buffers), and `Call`, one Backend
// call's NVTX range, device pointers and copies back. No kernels: every cuda/ops/*.cuh header is included by
// exactly one .cu file (its kernels are defined there), which is how the backend is split:
//   cuda_backend.cu              construction, streams and events, ranges, clocks, synchronize, the factory
//   cuda_memory.cu               upload, download, copies, the communicator's device reduction
//   cuda_gemm_attention_ops.cu   GEMMs (cuBLASLt) and the unfused attention core
//   cuda_layer_ops.cu            norms, rotary embedding, SwiGLU, GeLU, dropout, embedding
//   cuda_loss_optimizer_ops.cu   cross-entropy, Adam
//   cuda_elementwise_ops.cu      add, bias, copies, accumulation, zeroing
#include "cuda/cuda_backend.hpp"

#include "cuda/cuda_check.hpp"
#include "cuda/event_clock.hpp"
#include "cuda/ops/common.cuh"
#include "cuda/ops/matmul_context.cuh"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace gputwin::engine {

// The backend's tensors in GPU memory: stream-ordered allocations from the device's default pool on the
// backend's stream, so an allocation, the ops on it and its release are ordered without host waits.
class CudaAllocator final : public DeviceAllocator {
public:
  CudaAllocator(int device, cudaStream_t stream) : device_(device), stream_(stream) {}
  Device device() const override { return Device::Cuda; }
  void* allocate(size_t bytes) override
  {
    void* p = nullptr;
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaMallocAsync(&p, bytes, stream_));
    CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream_));
    return p;
  }
  void deallocate(void* p) noexcept override
  {
    // Must not throw (tensor destructors): a failing driver at exit is ignored.
    cudaSetDevice(device_);
    cudaFreeAsync(p, stream_);
  }

private:
  int device_;
  cudaStream_t stream_;
};

// The in-process communicator's device path, on the rank's communication stream: publishing a buffer first
// orders that stream after the compute issued so far (an event) and waits for it, then the stream copies from
// and reduces over the peers' buffers (every rank's on the same GPU), device to device.
class CudaBufferOps final : public BufferOps {
public:
  CudaBufferOps(int device, cudaStream_t compute, cudaStream_t communication)
      : device_(device), compute_(compute), stream_(communication)
  {
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaEventCreateWithFlags(&compute_done_, cudaEventDisableTiming));
  }
  ~CudaBufferOps() override
  {
    cudaSetDevice(device_);
    if (scratch_ != nullptr)
      cudaFreeAsync(scratch_, stream_);
    cudaStreamSynchronize(stream_);
    cudaEventDestroy(compute_done_);
  }
  CudaBufferOps(const CudaBufferOps&) = delete;
  CudaBufferOps& operator=(const CudaBufferOps&) = delete;

  Device device() const override { return Device::Cuda; }
  void publish() override
  {
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaEventRecord(compute_done_, compute_));
    CUDA_CHECK(cudaStreamWaitEvent(stream_, compute_done_, 0));
    wait();
  }
  void copy(void* dst, const void* src, int64_t bytes) override
  {
    if (bytes <= 0 || dst == src)
      return;
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, stream_));
  }
  // Sums (or maxes) the members' buffers into dst on the communication stream (cuda_memory.cu: the kernel).
  void reduce(void* dst, const std::vector<const void*>& src, int64_t offset, int64_t count, DType dtype,
              ReduceOp op) override;
  void* scratch(int64_t bytes) override
  {
    const size_t need = static_cast<size_t>(bytes > 0 ? bytes : 1);
    if (need > scratch_bytes_) {
      CUDA_CHECK(cudaSetDevice(device_));
      if (scratch_ != nullptr)
        CUDA_CHECK(cudaFreeAsync(scratch_, stream_));
      scratch_ = nullptr;
      CUDA_CHECK(cudaMallocAsync(&scratch_, need, stream_));
      scratch_bytes_ = need;
    }
    return scratch_;
  }
  // The host waits for the exchange, so compute launched after it sees the results.
  void complete() override { wait(); }

private:
  void wait()
  {
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }
  int device_;
  cudaStream_t compute_, stream_;
  cudaEvent_t compute_done_ = nullptr;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
};

struct CudaBackend::Impl {
  int device = 0;
  cudaStream_t stream = nullptr;        // compute (and the allocator, host copies)
  cudaStream_t comm_stream = nullptr;   // collectives and messages
  cudaEvent_t compute_done = nullptr;   // communication_waits_for_compute
  cudaEvent_t comm_done = nullptr;      // compute_waits_for_communication
  std::unique_ptr<CudaEventClock> clock;
  std::unique_ptr<CudaAllocator> allocator;
  std::unique_ptr<CudaBufferOps> buffer_ops;
  cuda::MatmulContext matmul;
  struct Buffer {
    void* p = nullptr;
    size_t bytes = 0;
  };
  std::vector<Buffer> buffers; // staging buffers, reused call after call
  float* scratch = nullptr;    // kernel scratch (layernorm statistics)
  size_t scratch_floats = 0;

  void* buffer(size_t index, size_t bytes)
  {
    if (index >= buffers.size())
      buffers.resize(index + 1);
    Buffer& b = buffers[index];
    if (b.bytes < bytes) {
      if (b.p != nullptr)
        CUDA_CHECK(cudaFree(b.p));
      b.p = nullptr;
      CUDA_CHECK(cudaMalloc(&b.p, bytes));
      b.bytes = bytes;
    }
    return b.p;
  }

  float* scratch_of(size_t floats)
  {
    if (floats > scratch_floats) {
      if (scratch != nullptr)
        CUDA_CHECK(cudaFree(scratch));
      scratch = nullptr;
      CUDA_CHECK(cudaMalloc(&scratch, floats * sizeof(float)));
      scratch_floats = floats;
    }
    return scratch;
  }
};

namespace cuda_detail {


inline void require(const char* kernel, const Tensor& t, int64_t elements)
{
  if (!t.defined() && elements > 0)
    throw std::logic_error(std::string(kernel) + ": undefined tensor");
  if (t.numel() < elements)
    throw std::logic_error(std::string(kernel) + ": " + t.describe() + " has fewer than " + std::to_string(elements) +
                           " elements");
}

inline void require_float(const char* kernel, const Tensor& t)
{
  if (t.dtype() != DType::F32 && t.dtype() != DType::BF16)
    throw std::logic_error(std::string(kernel) + ": expected an f32 or bf16 tensor, got " + t.describe());
}

// One Backend call: an NVTX range, device pointers for its tensors (staged or in place), and the copies back.
class Call {
public:
  Call(CudaBackend::Impl& impl, const char* name) : impl_(impl), range_(name), name_(name)
  {
    CUDA_CHECK(cudaSetDevice(impl_.device));
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // The device address of an input's bytes.
  const void* in(const Tensor& t) { return stage(t, true, false); }
  // The device address of an output's bytes; `read` when the kernel reads it too (+=, partial writes).
  void* out(const Tensor& t, bool read = false) { return stage(t, read, true); }
  cuda::ConstFloatPtr fin(const Tensor& t)
  {
    require_float(name_, t);
    return {in(t), t.dtype() == DType::BF16};
  }
  cuda::FloatPtr fout(const Tensor& t, bool read = false)
  {
    require_float(name_, t);
    return {out(t, read), t.dtype() == DType::BF16};
  }
  float* f32out(const Tensor& t, bool read)
  {
    if (t.dtype() != DType::F32)
      throw std::logic_error(std::string(name_) + ": expected an f32 tensor, got " + t.describe());
    return static_cast<float*>(out(t, read));
  }
  const float* f32in(const Tensor& t)
  {
    if (t.dtype() != DType::F32)
      throw std::logic_error(std::string(name_) + ": expected an f32 tensor, got " + t.describe());
    return static_cast<const float*>(in(t));
  }
  const int32_t* i32in(const Tensor& t)
  {
    if (t.dtype() != DType::I32)
      throw std::logic_error(std::string(name_) + ": expected an i32 tensor, got " + t.describe());
    return static_cast<const int32_t*>(in(t));
  }
  cudaStream_t stream() const { return impl_.stream; }

  // After launching the op. Device tensors: nothing to do, the call returns with the op in flight. Host
  // tensors (the fallback): copies the outputs back and waits for the stream, so the host sees the results
  // and the staging buffers are free for the next call.
  void finish()
  {
    if (!staged_)
      return;
    for (const Back& b : back_)
      CUDA_CHECK(cudaMemcpyAsync(b.host, b.device, b.bytes, cudaMemcpyDeviceToHost, impl_.stream));
    CUDA_CHECK(cudaStreamSynchronize(impl_.stream));
  }

private:
  void* stage(const Tensor& t, bool copy_in, bool copy_back)
  {
    if (!t.defined())
      return nullptr;
    if (t.device() == Device::Cuda)
      return t.raw();
    staged_ = true;
    const size_t bytes = static_cast<size_t>(t.bytes());
    void* d = impl_.buffer(next_++, bytes == 0 ? 1 : bytes);
    if (copy_in && bytes > 0)
      CUDA_CHECK(cudaMemcpyAsync(d, t.raw(), bytes, cudaMemcpyHostToDevice, impl_.stream));
    if (copy_back && bytes > 0)
      back_.push_back(Back{t.raw(), d, bytes});
    return d;
  }

  struct Back {
    void* host;
    const void* device;
    size_t bytes;
  };
  CudaBackend::Impl& impl_;
  cuda::NvtxRange range_;
  const char* name_;
  size_t next_ = 0;
  bool staged_ = false;
  std::vector<Back> back_;
};

} // namespace cuda_detail

} // namespace gputwin::engine
