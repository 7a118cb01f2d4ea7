#pragma once
// The CUDA backend's OpClock: a mark is a CUDA event recorded on the stream the op runs on (the compute
// stream, or the communication stream for collectives and messages), so the host places it without waiting.
// Times are resolved after the iteration: an anchor event, recorded on an idle device when the recorded
// iteration starts, is paired with the host clock's reading, and every mark is the anchor's host time plus
// cudaEventElapsedTime(anchor, mark) (about 0.5 us resolution). Events are pooled and reused.

#include "cuda/cuda_check.hpp"
#include "gputwin/engine/trace/op_clock.hpp"

#include <cmath>
#include <vector>

namespace gputwin::engine {

class CudaEventClock final : public OpClock {
public:
  CudaEventClock(int device, cudaStream_t compute, cudaStream_t communication)
      : device_(device), compute_(compute), communication_(communication)
  {
  }
  ~CudaEventClock() override
  {
    cudaSetDevice(device_); // destructors must not throw: a failing driver at exit is ignored
    if (anchor_ != nullptr)
      cudaEventDestroy(anchor_);
    for (cudaEvent_t e : events_)
      cudaEventDestroy(e);
  }
  CudaEventClock(const CudaEventClock&) = delete;
  CudaEventClock& operator=(const CudaEventClock&) = delete;

  void start(Clock::time_point epoch) override
  {
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaStreamSynchronize(compute_));
    CUDA_CHECK(cudaStreamSynchronize(communication_));
    if (anchor_ == nullptr)
      CUDA_CHECK(cudaEventCreate(&anchor_));
    CUDA_CHECK(cudaEventRecord(anchor_, compute_));
    CUDA_CHECK(cudaEventSynchronize(anchor_)); // an idle stream: the event completes as the host reads its clock
    anchor_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - epoch).count();
    used_ = 0;
  }

  int64_t mark(TraceStream stream) override
  {
    if (anchor_ == nullptr)
      throw std::logic_error("CudaEventClock::mark before start");
    if (used_ == events_.size()) {
      cudaEvent_t e = nullptr;
      CUDA_CHECK(cudaEventCreate(&e));
      events_.push_back(e);
    }
    const cudaStream_t on = stream == TraceStream::Compute ? compute_ : communication_;
    CUDA_CHECK(cudaEventRecord(events_[used_], on));
    return static_cast<int64_t>(used_++);
  }

  int64_t nanoseconds(int64_t handle) override
  {
    if (handle < 0 || static_cast<size_t>(handle) >= used_)
      throw std::logic_error("CudaEventClock: no mark " + std::to_string(handle));
    const cudaEvent_t e = events_[static_cast<size_t>(handle)];
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaEventSynchronize(e));
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, anchor_, e));
    return anchor_ns_ + static_cast<int64_t>(std::llround(static_cast<double>(ms) * 1e6));
  }

private:
  int device_;
  cudaStream_t compute_, communication_;
  cudaEvent_t anchor_ = nullptr;
  int64_t anchor_ns_ = 0;
  std::vector<cudaEvent_t> events_;
  size_t used_ = 0;
};

} // namespace gputwin::engine
