#pragma once
// How long a compute op takes on a GPU: a roofline with a shape-dependent efficiency for GEMMs and a bandwidth
// efficiency for memory-bound kernels, plus a fixed per-kernel overhead. The parameters are plain numbers so
// that a fit to measured traces (gputwin calibrate) can replace them.

#include "gputwin/traces/op_graph.hpp"

#include <string>

namespace gputwin {

struct GpuComputeModel {
  std::string gpu_kind;
  double peak_flops = 0;      // dense bf16 tensor-core peak, FLOP/s
  double hbm_bytes_per_s = 0; // HBM bandwidth
  int multiprocessors = 0;    // SMs: GEMM tiles are scheduled in waves of this many
  double gemm_tile_m = 128;   // output tile of the GEMM kernels (cuBLAS/CUTLASS bf16 on sm_80/sm_90)
  double gemm_tile_n = 128;
  double gemm_efficiency = 0;   // fraction of peak a large, well-shaped GEMM reaches
  double gemm_k_half = 0;       // inner dimension at which a GEMM reaches half its efficiency (short-k penalty)
  double memory_efficiency = 0; // fraction of HBM bandwidth memory-bound kernels reach
  double kernel_overhead_s = 0; // launch and tail per kernel
  std::string source;           // which measurements the parameters were fit to
};

// The built-in model of a GPU kind ("a100-sxm4-80gb", "h100-sxm5-80gb", "h200-sxm-141gb"), with the cluster
// file's peak and HBM bandwidth. Throws std::invalid_argument for an unknown kind.
GpuComputeModel builtin_compute_model(const std::string& gpu_kind, double peak_flops, double hbm_bytes_per_s);

// A plain roofline at `peak_flops` and `hbm_bytes_per_s`: efficiencies 1, no overhead, one "multiprocessor"
// with 1 x 1 tiles (no wave quantization) -- the reference for devices without a built-in model (a CPU).
GpuComputeModel nominal_roofline_model(const std::string& kind, double peak_flops, double hbm_bytes_per_s,
                                       const std::string& source);

// Fraction of the peak a GEMM of this shape reaches: efficiency x wave quantization x k / (k + k_half).
double gemm_efficiency(const GpuComputeModel& gpu, const traces::GemmShape& shape);

// Duration of compute op `op` (its FLOPs, bytes and GEMM shape) on `gpu`, seconds.
double compute_duration_s(const GpuComputeModel& gpu, const traces::Op& op);

} // namespace gputwin
