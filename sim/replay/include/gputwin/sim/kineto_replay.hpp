#pragma once
// Replaying a PyTorch profiler (Kineto) step as measured (traces/KINETO.md): the host issues the step's GPU work
// at the measured CPU times (the launch gaps of all host threads merged, host syncs waiting for the GPU), each
// kernel/memcpy keeps its measured duration on its CUDA stream, and each NCCL collective costs its own
// measured duration: with one rank's file the peers' side is not known, so the kernel's duration (which
// includes any wait for the peers) stands for the whole collective -- a 1-rank replay of the collective.
// Re-targeting: compute kernels (and device-to-device copies) divided by `compute_scale`, collectives by
// `comm_scale`; host times and host<->device copies stay as measured. Plain C++, no SimGrid.

#include "gputwin/models/framework_profile.hpp"
#include "gputwin/sim/comm_source.hpp"
#include "gputwin/traces/kineto.hpp"

#include <functional>
#include <map>

namespace gputwin::sim {

struct KinetoScales {
  double compute = 1; // GPUs X times faster: compute kernels, memsets and device-to-device copies / X
  double comm = 1;    // network X times faster: collectives / X
};

// The host of the trace's rank program: issue gaps, syncs and launch latency as measured.
HostProgram kineto_host_program(const traces::KinetoTrace& trace);

// Durations of the non-communication ops: measured / scale (host markers take 0). A sim::ComputeDuration.
std::function<double(size_t, const traces::Op&)> kineto_compute_duration(const KinetoScales& scales);

// Each collective: no flows, its measured duration / comm scale as a fixed latency.
class KinetoCommSource : public CommSource {
public:
  explicit KinetoCommSource(double comm_scale) : comm_scale_(comm_scale) {}
  const CommWork& collective(const traces::Op& op) override;
  const CommWork& message(int32_t src_rank, const traces::Op& send) override;
  bool may_run_alone(const traces::Op&) const override { return false; }

private:
  double comm_scale_;
  std::map<std::pair<int32_t, int64_t>, CommWork> collectives_;
};

} // namespace gputwin::sim
