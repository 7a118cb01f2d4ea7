// The CUDA backend: each Backend call runs one operator of cuda/ops/ on the backend's stream inside an NVTX
// range named like the op, on device tensors in place (asynchronously); host tensors are staged through
// device buffers and copied back (see cuda_backend.hpp).
#include "cuda/cuda_backend.hpp"

#include "cuda/cuda_check.hpp"
#include "cuda/device_query.hpp"
#include "cuda/event_clock.hpp"
#include "cuda/ops/adam.cuh"
#include "cuda/ops/attention.cuh"
#include "cuda/ops/collective.cuh"
#include "cuda/ops/cross_entropy.cuh"
#include "cuda/ops/dropout.cuh"
#include "cuda/ops/elementwise.cuh"
#include "cuda/ops/embedding.cuh"
#include "cuda/ops/gelu.cuh"
#include "cuda/ops/layernorm.cuh"
#include "cuda/ops/rmsnorm.cuh"
#include "cuda/ops/rope.cuh"
#include "cuda/ops/swiglu.cuh"
#include "cuda/ops/matmul.cuh"
#include "cuda/ops/softmax.cuh"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace gputwin::engine {

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
  void reduce(void* dst, const std::vector<const void*>& src, int64_t offset, int64_t count, DType dtype,
              ReduceOp op) override
  {
    if (dtype != DType::F32 && dtype != DType::BF16)
      throw std::logic_error("CudaBufferOps::reduce: expected f32 or bf16 elements, got " + to_string(dtype));
    CUDA_CHECK(cudaSetDevice(device_));
    cuda::member_reduce(dst, src.data(), static_cast<int>(src.size()), dtype == DType::BF16, offset, count,
                        op == ReduceOp::Max, stream_);
  }
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

namespace {

void require(const char* kernel, const Tensor& t, int64_t elements)
{
  if (!t.defined() && elements > 0)
    throw std::logic_error(std::string(kernel) + ": undefined tensor");
  if (t.numel() < elements)
    throw std::logic_error(std::string(kernel) + ": " + t.describe() + " has fewer than " + std::to_string(elements) +
                           " elements");
}

void require_float(const char* kernel, const Tensor& t)
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

cuda::AttentionShape shape_of(const AttentionDims& d)
{
  return cuda::AttentionShape{d.batch, d.heads, d.seq, d.head_dim, d.groups()};
}

void check_attention(const char* kernel, const Tensor& qkv, const Tensor& scores, const AttentionDims& d)
{
  require(kernel, qkv, d.seq * d.batch * d.qkv_width());
  require(kernel, scores, d.batch * d.heads * d.seq * d.seq);
}

} // namespace

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

void CudaBackend::gemm(Tensor& c, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, int64_t m,
                       int64_t n, int64_t k, float alpha, float beta)
{
  require("gemm a", a, m * k);
  require("gemm b", b, k * n);
  require("gemm c", c, m * n);
  if (c.dtype() == DType::BF16 && beta != 0.0f)
    throw std::logic_error("gemm: a bf16 C needs beta = 0");
  Call call(*impl_, "gemm");
  const cuda::ConstFloatPtr pa = call.fin(a), pb = call.fin(b);
  const cuda::FloatPtr pc = call.fout(c, beta != 0.0f);
  const cuda::MatmulOperand oa{pa.p, pa.bf16, transpose_a ? m : k, 0, transpose_a};
  const cuda::MatmulOperand ob{pb.p, pb.bf16, transpose_b ? k : n, 0, transpose_b};
  cuda::matmul_forward(impl_->matmul, cuda::MatmulOutput{pc.p, pc.bf16, n, 0}, oa, ob, m, n, k, 1, alpha, beta,
                       call.stream());
  call.finish();
}

void CudaBackend::layernorm_forward(Tensor& out, const Tensor& in, const Tensor& gamma, const Tensor& beta,
                                    int64_t rows, int64_t cols, float eps)
{
  require("layernorm_forward in", in, rows * cols);
  require("layernorm_forward out", out, rows * cols);
  require("layernorm_forward gamma", gamma, cols);
  require("layernorm_forward beta", beta, cols);
  Call call(*impl_, "layernorm_forward");
  cuda::layernorm_forward(call.fout(out), call.fin(in), call.fin(gamma), call.fin(beta), rows, cols, eps,
                          call.stream());
  call.finish();
}

void CudaBackend::layernorm_backward(Tensor& d_in, Tensor& d_gamma, Tensor& d_beta, const Tensor& d_out,
                                     const Tensor& in, const Tensor& gamma, int64_t rows, int64_t cols, float eps)
{
  require("layernorm_backward in", in, rows * cols);
  require("layernorm_backward d_out", d_out, rows * cols);
  require("layernorm_backward d_in", d_in, rows * cols);
  require("layernorm_backward d_gamma", d_gamma, cols);
  require("layernorm_backward d_beta", d_beta, cols);
  Call call(*impl_, "layernorm_backward");
  float* scratch = impl_->scratch_of(cuda::layernorm_backward_scratch_floats(rows));
  cuda::layernorm_backward(call.fout(d_in), call.f32out(d_gamma, true), call.f32out(d_beta, true), call.fin(d_out),
                           call.fin(in), call.fin(gamma), rows, cols, eps, scratch, call.stream());
  call.finish();
}

void CudaBackend::rmsnorm_forward(Tensor& out, const Tensor& in, const Tensor& gamma, int64_t rows, int64_t cols,
                                  float eps)
{
  require("rmsnorm_forward in", in, rows * cols);
  require("rmsnorm_forward out", out, rows * cols);
  require("rmsnorm_forward gamma", gamma, cols);
  Call call(*impl_, "rmsnorm_forward");
  cuda::rmsnorm_forward(call.fout(out), call.fin(in), call.fin(gamma), rows, cols, eps, call.stream());
  call.finish();
}

void CudaBackend::rmsnorm_backward(Tensor& d_in, Tensor& d_gamma, const Tensor& d_out, const Tensor& in,
                                   const Tensor& gamma, int64_t rows, int64_t cols, float eps)
{
  require("rmsnorm_backward in", in, rows * cols);
  require("rmsnorm_backward d_out", d_out, rows * cols);
  require("rmsnorm_backward d_in", d_in, rows * cols);
  require("rmsnorm_backward d_gamma", d_gamma, cols);
  Call call(*impl_, "rmsnorm_backward");
  float* scratch = impl_->scratch_of(cuda::rmsnorm_backward_scratch_floats(rows));
  cuda::rmsnorm_backward(call.fout(d_in), call.f32out(d_gamma, true), call.fin(d_out), call.fin(in), call.fin(gamma),
                         rows, cols, eps, scratch, call.stream());
  call.finish();
}

namespace {

cuda::RopeShape rope_shape_of(const RopeDims& r)
{
  const AttentionDims& d = r.attention;
  if (d.head_dim % 2 != 0)
    throw std::logic_error("rope: head_dim " + std::to_string(d.head_dim) + " is odd");
  return cuda::RopeShape{d.seq, d.batch, d.heads, d.groups(), d.head_dim, r.first_position, r.base};
}

} // namespace

void CudaBackend::rope_forward(Tensor& qkv, const RopeDims& dims)
{
  const AttentionDims& d = dims.attention;
  require("rope_forward qkv", qkv, d.seq * d.batch * d.qkv_width());
  Call call(*impl_, "rope_forward");
  cuda::rope(call.fout(qkv, true), rope_shape_of(dims), 1.0f, call.stream());
  call.finish();
}

void CudaBackend::rope_backward(Tensor& d_qkv, const RopeDims& dims)
{
  const AttentionDims& d = dims.attention;
  require("rope_backward d_qkv", d_qkv, d.seq * d.batch * d.qkv_width());
  Call call(*impl_, "rope_backward");
  cuda::rope(call.fout(d_qkv, true), rope_shape_of(dims), -1.0f, call.stream());
  call.finish();
}

void CudaBackend::swiglu_forward(Tensor& out, const Tensor& in, int64_t rows, int64_t cols)
{
  require("swiglu_forward in", in, rows * 2 * cols);
  require("swiglu_forward out", out, rows * cols);
  Call call(*impl_, "swiglu_forward");
  cuda::swiglu_forward(call.fout(out), call.fin(in), rows, cols, call.stream());
  call.finish();
}

void CudaBackend::swiglu_backward(Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t rows, int64_t cols)
{
  require("swiglu_backward in", in, rows * 2 * cols);
  require("swiglu_backward d_out", d_out, rows * cols);
  require("swiglu_backward d_in", d_in, rows * 2 * cols);
  Call call(*impl_, "swiglu_backward");
  cuda::swiglu_backward(call.fout(d_in), call.fin(d_out), call.fin(in), rows, cols, call.stream());
  call.finish();
}

void CudaBackend::gelu_forward(Tensor& out, const Tensor& in, int64_t n)
{
  require("gelu_forward in", in, n);
  require("gelu_forward out", out, n);
  Call call(*impl_, "gelu_forward");
  cuda::gelu_forward(call.fout(out), call.fin(in), n, call.stream());
  call.finish();
}

void CudaBackend::gelu_backward(Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t n)
{
  require("gelu_backward in", in, n);
  require("gelu_backward d_out", d_out, n);
  require("gelu_backward d_in", d_in, n);
  Call call(*impl_, "gelu_backward");
  cuda::gelu_backward(call.fout(d_in), call.fin(d_out), call.fin(in), n, call.stream());
  call.finish();
}

void CudaBackend::attention_scores_forward(Tensor& scores, const Tensor& qkv, const AttentionDims& dims)
{
  check_attention("attention_scores_forward", qkv, scores, dims);
  Call call(*impl_, "attention_scores_forward");
  cuda::attention_scores_forward(impl_->matmul, call.fout(scores), call.fin(qkv), shape_of(dims), call.stream());
  call.finish();
}

void CudaBackend::attention_scores_backward(Tensor& d_qkv, const Tensor& d_scores, const Tensor& qkv,
                                            const AttentionDims& dims)
{
  check_attention("attention_scores_backward", qkv, d_scores, dims);
  check_attention("attention_scores_backward", d_qkv, d_scores, dims);
  Call call(*impl_, "attention_scores_backward");
  // d_qkv is read as well: its V part must come back unchanged.
  cuda::attention_scores_backward(impl_->matmul, call.fout(d_qkv, true), call.fin(d_scores), call.fin(qkv),
                                  shape_of(dims), call.stream());
  call.finish();
}

void CudaBackend::causal_softmax_forward(Tensor& probs, const Tensor& scores, int64_t rows, int64_t seq)
{
  require("causal_softmax_forward scores", scores, rows * seq);
  require("causal_softmax_forward probs", probs, rows * seq);
  Call call(*impl_, "causal_softmax_forward");
  cuda::causal_softmax_forward(call.fout(probs), call.fin(scores), rows, seq, 1.0f, call.stream());
  call.finish();
}

void CudaBackend::causal_softmax_backward(Tensor& d_scores, const Tensor& d_probs, const Tensor& probs, int64_t rows,
                                          int64_t seq)
{
  require("causal_softmax_backward probs", probs, rows * seq);
  require("causal_softmax_backward d_probs", d_probs, rows * seq);
  require("causal_softmax_backward d_scores", d_scores, rows * seq);
  Call call(*impl_, "causal_softmax_backward");
  cuda::causal_softmax_backward(call.fout(d_scores), call.fin(d_probs), call.fin(probs), rows, seq, 1.0f,
                                call.stream());
  call.finish();
}

void CudaBackend::attention_context_forward(Tensor& context, const Tensor& probs, const Tensor& qkv,
                                            const AttentionDims& dims)
{
  check_attention("attention_context_forward", qkv, probs, dims);
  require("attention_context_forward context", context, dims.seq * dims.batch * dims.heads * dims.head_dim);
  Call call(*impl_, "attention_context_forward");
  cuda::attention_context_forward(impl_->matmul, call.fout(context), call.fin(probs), call.fin(qkv), shape_of(dims),
                                  call.stream());
  call.finish();
}

void CudaBackend::attention_context_backward(Tensor& d_probs, Tensor& d_qkv, const Tensor& d_context,
                                             const Tensor& probs, const Tensor& qkv, const AttentionDims& dims)
{
  check_attention("attention_context_backward", qkv, probs, dims);
  check_attention("attention_context_backward", d_qkv, d_probs, dims);
  Call call(*impl_, "attention_context_backward");
  // d_qkv is read as well: its Q and K parts must come back unchanged.
  cuda::attention_context_backward(impl_->matmul, call.fout(d_probs), call.fout(d_qkv, true), call.fin(d_context),
                                   call.fin(probs), call.fin(qkv), shape_of(dims), call.stream());
  call.finish();
}

void CudaBackend::dropout_forward(Tensor& out, Tensor& mask, const Tensor& in, const DropoutSite& site)
{
  const auto& l = site.local_dims;
  const int64_t n = l[0] * l[1] * l[2] * l[3];
  require("dropout_forward in", in, n);
  require("dropout_forward out", out, n);
  require("dropout_forward mask", mask, n);
  if (mask.dtype() != DType::U8)
    throw std::logic_error("dropout_forward: the mask must be u8, got " + mask.describe());
  cuda::DropoutBlock blk{};
  for (size_t d = 0; d < 4; ++d) {
    if (site.offsets[d] + l[d] > site.global_dims[d])
      throw std::logic_error("dropout_forward: local block outside the logical tensor");
    blk.local[d] = l[d];
    blk.offset[d] = site.offsets[d];
    blk.global[d] = site.global_dims[d];
  }
  if (n == 0)
    return;
  Call call(*impl_, "dropout_forward");
  cuda::dropout_forward(call.fout(out), static_cast<uint8_t*>(call.out(mask)), call.fin(in), site.key, site.probability,
                        blk, call.stream());
  call.finish();
}

void CudaBackend::dropout_backward(Tensor& d_in, const Tensor& d_out, const Tensor& mask, float probability)
{
  const int64_t n = mask.numel();
  require("dropout_backward d_out", d_out, n);
  require("dropout_backward d_in", d_in, n);
  if (n == 0)
    return;
  Call call(*impl_, "dropout_backward");
  cuda::dropout_backward(call.fout(d_in), call.fin(d_out), static_cast<const uint8_t*>(call.in(mask)), n, probability,
                         call.stream());
  call.finish();
}

void CudaBackend::embedding_forward(Tensor& out, const Tensor& tokens, const Tensor& table, int64_t vocab_start,
                                    int64_t owned_rows, int64_t n, int64_t h)
{
  require("embedding_forward tokens", tokens, n);
  require("embedding_forward out", out, n * h);
  require("embedding_forward table", table, owned_rows * h);
  Call call(*impl_, "embedding_forward");
  cuda::embedding_forward(call.fout(out), call.i32in(tokens), call.fin(table), vocab_start, owned_rows, n, h,
                          call.stream());
  call.finish();
}

void CudaBackend::embedding_backward(Tensor& d_table, const Tensor& d_out, const Tensor& tokens, int64_t vocab_start,
                                     int64_t owned_rows, int64_t n, int64_t h)
{
  require("embedding_backward tokens", tokens, n);
  require("embedding_backward d_out", d_out, n * h);
  require("embedding_backward d_table", d_table, owned_rows * h);
  Call call(*impl_, "embedding_backward");
  cuda::embedding_backward(call.f32out(d_table, true), call.fin(d_out), call.i32in(tokens), vocab_start, owned_rows, n,
                           h, call.stream());
  call.finish();
}

void CudaBackend::cross_entropy_local_max(Tensor& row_max, const Tensor& logits, int64_t rows, int64_t cols,
                                          int64_t valid_cols)
{
  require("cross_entropy_local_max logits", logits, rows * cols);
  require("cross_entropy_local_max row_max", row_max, rows);
  Call call(*impl_, "cross_entropy_local_max");
  cuda::cross_entropy_local_max(call.f32out(row_max, false), call.f32in(logits), rows, cols, valid_cols, call.stream());
  call.finish();
}

void CudaBackend::cross_entropy_local_sums(Tensor& sum_exp, Tensor& target_logit, const Tensor& logits,
                                           const Tensor& targets, const Tensor& row_max, int64_t rows, int64_t cols,
                                           int64_t valid_cols, int64_t vocab_start)
{
  require("cross_entropy_local_sums logits", logits, rows * cols);
  require("cross_entropy_local_sums targets", targets, rows);
  Call call(*impl_, "cross_entropy_local_sums");
  cuda::cross_entropy_local_sums(call.f32out(sum_exp, false), call.f32out(target_logit, false), call.f32in(logits),
                                 call.i32in(targets), call.f32in(row_max), rows, cols, valid_cols, vocab_start,
                                 call.stream());
  call.finish();
}

void CudaBackend::cross_entropy_backward(Tensor& d_logits, const Tensor& logits, const Tensor& targets,
                                         const Tensor& row_max, const Tensor& sum_exp, int64_t rows, int64_t cols,
                                         int64_t valid_cols, int64_t vocab_start, float scale)
{
  require("cross_entropy_backward logits", logits, rows * cols);
  require("cross_entropy_backward d_logits", d_logits, rows * cols);
  Call call(*impl_, "cross_entropy_backward");
  cuda::cross_entropy_backward(call.f32out(d_logits, false), call.f32in(logits), call.i32in(targets),
                               call.f32in(row_max), call.f32in(sum_exp), rows, cols, valid_cols, vocab_start, scale,
                               call.stream());
  call.finish();
}

void CudaBackend::adam_step(Tensor& master, Tensor& momentum, Tensor& variance, const Tensor& grad, int64_t n,
                            const AdamHyper& hyper, int64_t step)
{
  require("adam_step master", master, n);
  require("adam_step momentum", momentum, n);
  require("adam_step variance", variance, n);
  require("adam_step grad", grad, n);
  Call call(*impl_, "adam_step");
  cuda::adam_update(call.f32out(master, true), call.f32out(momentum, true), call.f32out(variance, true),
                    call.f32in(grad), n, hyper.learning_rate, hyper.beta1, hyper.beta2, hyper.epsilon,
                    hyper.weight_decay, step, call.stream());
  call.finish();
}

void CudaBackend::add(Tensor& out, const Tensor& a, const Tensor& b, int64_t n)
{
  require("add a", a, n);
  require("add b", b, n);
  require("add out", out, n);
  Call call(*impl_, "add");
  cuda::add_forward(call.fout(out), call.fin(a), call.fin(b), n, call.stream());
  call.finish();
}

void CudaBackend::add_bias(Tensor& out, const Tensor& in, const Tensor& bias, int64_t rows, int64_t cols)
{
  require("add_bias in", in, rows * cols);
  require("add_bias out", out, rows * cols);
  require("add_bias bias", bias, cols);
  Call call(*impl_, "add_bias");
  cuda::add_bias_forward(call.fout(out), call.fin(in), call.fin(bias), rows, cols, call.stream());
  call.finish();
}

void CudaBackend::bias_backward(Tensor& d_bias, const Tensor& d_out, int64_t rows, int64_t cols)
{
  require("bias_backward d_out", d_out, rows * cols);
  require("bias_backward d_bias", d_bias, cols);
  Call call(*impl_, "bias_backward");
  cuda::bias_backward(call.f32out(d_bias, true), call.fin(d_out), rows, cols, call.stream());
  call.finish();
}

void CudaBackend::copy(Tensor& out, const Tensor& in, int64_t n)
{
  require("copy in", in, n);
  require("copy out", out, n);
  Call call(*impl_, "copy");
  cuda::convert(call.fout(out), call.fin(in), n, call.stream());
  call.finish();
}

void CudaBackend::accumulate(Tensor& out, const Tensor& in, int64_t n)
{
  require("accumulate in", in, n);
  require("accumulate out", out, n);
  Call call(*impl_, "accumulate");
  cuda::accumulate(call.f32out(out, true), call.fin(in), n, call.stream());
  call.finish();
}

void CudaBackend::zero(Tensor& t)
{
  if (!t.defined())
    return;
  Call call(*impl_, "zero");
  CUDA_CHECK(cudaMemsetAsync(call.out(t), 0, static_cast<size_t>(t.bytes()), call.stream()));
  call.finish();
}

std::unique_ptr<Backend> make_cuda_backend()
{
  return std::make_unique<CudaBackend>(0);
}

} // namespace gputwin::engine
