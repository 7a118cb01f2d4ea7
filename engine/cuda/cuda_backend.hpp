#pragma once
// The CUDA backend: the Backend interface on one NVIDIA GPU, bf16 storage with fp32 accumulation, GEMMs
// through cuBLASLt and the kernels of cuda/ops/ (one operator per header). Plain C++ header: the engine
// includes it without a CUDA compiler.
//
// Residency: device() is Cuda and allocator() allocates the engine's tensors in GPU memory (stream-ordered
// cudaMallocAsync/cudaFreeAsync on the backend's stream, zero-filled with cudaMemsetAsync), so a call on
// Device::Cuda tensors uses them in place and only launches work on the stream: it returns before the GPU is
// done (synchronize() waits; upload/download wait for their copy). A host tensor (Device::Cpu, e.g. the
// kernel tests') still works as a fallback: that call copies its inputs to device buffers and its outputs
// back, and waits for the stream before returning. buffer_ops() gives the in-process communicator device-to-
// device copies and a member-order reduction kernel, so collectives between ranks' tensors on this GPU need
// no host staging.
//
// Streams and timing: compute runs on one stream, collectives and messages on a second (buffer_ops() and an
// NCCL communicator use it); the engine orders them with events around every exchange
// (communication_waits_for_compute / compute_waits_for_communication). op_clock() records a CUDA event on the
// op's stream at its start and end, resolved after the iteration, so tracing never waits for an op.

#include "gputwin/engine/backend/backend.hpp"

#include <memory>
#include <string>

namespace gputwin::engine {

// Why the CUDA backend cannot run on this machine, in one line ("" when it can): no driver, a driver older
// than the runtime, no device, or a device older than sm_80.
std::string cuda_backend_unavailable_reason();

class CudaBackend : public Backend {
public:
  // Takes GPU `device`, creates its stream and cuBLASLt handle. Throws CudaError (file:line) if it cannot.
  explicit CudaBackend(int device = 0);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string name() const override { return "cuda"; }
  Device device() const override { return Device::Cuda; }
  DeviceAllocator* allocator() override;
  void upload(const Tensor& dst, const void* host, int64_t bytes) override;
  void download(void* host, const Tensor& src, int64_t bytes) override;
  void copy_bytes(const Tensor& dst, const Tensor& src, int64_t bytes) override;
  void synchronize() override; // both streams
  BufferOps* buffer_ops() override;
  // Two streams (compute; collectives and messages) ordered by events; ops timed by CUDA events on them.
  void communication_waits_for_compute() override;
  void compute_waits_for_communication() override;
  OpClock* op_clock() override;
  void begin_range(const std::string& name) override; // NVTX
  void end_range() override;
  // The communication stream as a cudaStream_t (an NCCL communicator of this rank launches on it).
  void* communication_stream_handle() const;
  // The GPU's name ("NVIDIA H100 80GB HBM3").
  std::string gpu_name() const;

  void gemm(Tensor& c, const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, int64_t m, int64_t n,
            int64_t k, float alpha, float beta) override;
  void layernorm_forward(Tensor& out, const Tensor& in, const Tensor& gamma, const Tensor& beta, int64_t rows,
                         int64_t cols, float eps) override;
  void layernorm_backward(Tensor& d_in, Tensor& d_gamma, Tensor& d_beta, const Tensor& d_out, const Tensor& in,
                          const Tensor& gamma, int64_t rows, int64_t cols, float eps) override;
  void rmsnorm_forward(Tensor& out, const Tensor& in, const Tensor& gamma, int64_t rows, int64_t cols,
                       float eps) override;
  void rmsnorm_backward(Tensor& d_in, Tensor& d_gamma, const Tensor& d_out, const Tensor& in, const Tensor& gamma,
                        int64_t rows, int64_t cols, float eps) override;
  void rope_forward(Tensor& qkv, const RopeDims& dims) override;
  void rope_backward(Tensor& d_qkv, const RopeDims& dims) override;
  void swiglu_forward(Tensor& out, const Tensor& in, int64_t rows, int64_t cols) override;
  void swiglu_backward(Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t rows, int64_t cols) override;
  void gelu_forward(Tensor& out, const Tensor& in, int64_t n) override;
  void gelu_backward(Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t n) override;
  void squared_relu_forward(Tensor& out, const Tensor& in, int64_t n) override;
  void squared_relu_backward(Tensor& d_in, const Tensor& d_out, const Tensor& in, int64_t n) override;
  void attention_scores_forward(Tensor& scores, const Tensor& qkv, const AttentionDims& dims) override;
  void attention_scores_backward(Tensor& d_qkv, const Tensor& d_scores, const Tensor& qkv,
                                 const AttentionDims& dims) override;
  void causal_softmax_forward(Tensor& probs, const Tensor& scores, int64_t rows, int64_t seq) override;
  void causal_softmax_backward(Tensor& d_scores, const Tensor& d_probs, const Tensor& probs, int64_t rows,
                               int64_t seq) override;
  void attention_context_forward(Tensor& context, const Tensor& probs, const Tensor& qkv,
                                 const AttentionDims& dims) override;
  void attention_context_backward(Tensor& d_probs, Tensor& d_qkv, const Tensor& d_context, const Tensor& probs,
                                  const Tensor& qkv, const AttentionDims& dims) override;
  void dropout_forward(Tensor& out, Tensor& mask, const Tensor& in, const DropoutSite& site) override;
  void dropout_backward(Tensor& d_in, const Tensor& d_out, const Tensor& mask, float probability) override;
  void embedding_forward(Tensor& out, const Tensor& tokens, const Tensor& table, int64_t vocab_start,
                         int64_t owned_rows, int64_t n, int64_t h) override;
  void embedding_backward(Tensor& d_table, const Tensor& d_out, const Tensor& tokens, int64_t vocab_start,
                          int64_t owned_rows, int64_t n, int64_t h) override;
  void cross_entropy_local_max(Tensor& row_max, const Tensor& logits, int64_t rows, int64_t cols,
                               int64_t valid_cols) override;
  void cross_entropy_local_sums(Tensor& sum_exp, Tensor& target_logit, const Tensor& logits, const Tensor& targets,
                                const Tensor& row_max, int64_t rows, int64_t cols, int64_t valid_cols,
                                int64_t vocab_start) override;
  void cross_entropy_backward(Tensor& d_logits, const Tensor& logits, const Tensor& targets, const Tensor& row_max,
                              const Tensor& sum_exp, int64_t rows, int64_t cols, int64_t valid_cols,
                              int64_t vocab_start, float scale) override;
  void adam_step(Tensor& master, Tensor& momentum, Tensor& variance, const Tensor& grad, int64_t n,
                 const AdamHyper& hyper, int64_t step) override;
  void add(Tensor& out, const Tensor& a, const Tensor& b, int64_t n) override;
  void add_bias(Tensor& out, const Tensor& in, const Tensor& bias, int64_t rows, int64_t cols) override;
  void bias_backward(Tensor& d_bias, const Tensor& d_out, int64_t rows, int64_t cols) override;
  void copy(Tensor& out, const Tensor& in, int64_t n) override;
  void accumulate(Tensor& out, const Tensor& in, int64_t n) override;
  void zero(Tensor& t) override;

  struct Impl;

private:
  std::unique_ptr<Impl> impl_;
};

// A CudaBackend on GPU 0, for make_backend(BackendKind::Cuda).
std::unique_ptr<Backend> make_cuda_backend();

} // namespace gputwin::engine
