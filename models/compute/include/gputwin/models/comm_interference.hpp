#pragma once
// Compute-communication interference: NCCL runs every channel of a collective or send/receive as one thread
// block (CTA) resident on an SM for the whole operation, and moves its data through the GPU's HBM, so a kernel
// that overlaps communication on the same GPU runs with fewer SMs and less HBM bandwidth than alone.
//
// While communication with `channels` channels in total and `hbm_bytes_per_s` of memory traffic is in flight on
// a GPU of S SMs:
//   SMs left       S' = S - min(S - 1, channels x sms_per_channel)
//   GEMM math      t_math x (S / S') x wave(S) / wave(S')   (the tiles re-quantised over S' SMs: wave(X) =
//                  tiles / (ceil(tiles / X) X), gpu_compute_model.hpp's wave quantization)
//   HBM share      share = max(min_hbm_share, 1 - hbm_bytes_per_s / hbm peak): every kernel's memory term is
//                  divided by it (GEMM operand streaming and memory-bound kernels alike)
//   duration       max(GEMM math, memory / share) + overheads (GEMM-shaped); overheads + bytes / (bandwidth x
//                  share) (memory-bound): the compute model's formula with those two changes.
// A compute op progresses at rate (its duration alone) / (its duration under the load in flight): the executors
// advance its remaining work at that rate and change the rate whenever communication starts or ends on its GPU
// (program_executor.cpp, dag_executor.cpp); the communication itself is not slowed.
// Parameters and their sources: sim/README.md, "Compute–communication interference". Plain C++.

#include "gputwin/traces/op_graph.hpp"

#include <string>

namespace gputwin {

struct GpuComputeModel;

// Per GPU generation (built-in models, or a model file's `comm_interference:` section).
struct CommInterferenceParams {
  bool enabled = false;               // off: overlapped communication costs compute nothing
  double sms_per_channel = 1;         // SMs one NCCL channel (one CTA) takes from a concurrent kernel
  int p2p_channels = 2;               // channels of one pipeline send or receive (NCCL_NCHANNELS_PER_NET_PEER)
  double hbm_bytes_per_comm_byte = 1; // HBM bytes the GPU reads/writes per byte it sends or receives
  std::string source;                 // where the numbers come from
};

// The communication in flight on one GPU at an instant: summed over its communication ops.
struct CommLoad {
  int channels = 0;
  double hbm_bytes_per_s = 0;
  bool empty() const { return channels <= 0 && hbm_bytes_per_s <= 0; }
  CommLoad& operator+=(const CommLoad& o)
  {
    channels += o.channels;
    hbm_bytes_per_s += o.hbm_bytes_per_s;
    return *this;
  }
  CommLoad& operator-=(const CommLoad& o)
  {
    channels -= o.channels;
    hbm_bytes_per_s -= o.hbm_bytes_per_s;
    return *this;
  }
};

// The smallest fraction of HBM bandwidth a kernel keeps under any communication load.
constexpr double min_hbm_share = 0.1;

// Seconds compute op `op` takes on `gpu` with `load` in flight the whole time (compute_duration_s when the load
// is empty). REQUIRES: gpu.multiprocessors >= 1.
double interfered_duration_s(const GpuComputeModel& gpu, const traces::Op& op, const CommLoad& load);

// The rate, in (0, 1], at which compute op `op` progresses under `load`: compute_duration_s / interfered_duration_s
// (1 for an empty load or an op without modelled time).
double interference_rate(const GpuComputeModel& gpu, const traces::Op& op, const CommLoad& load);
// The same with the op's compute_duration_s(gpu, op) given (`alone_s`): for callers that evaluate one op under
// many loads.
double interference_rate(const GpuComputeModel& gpu, const traces::Op& op, const CommLoad& load, double alone_s);

} // namespace gputwin
