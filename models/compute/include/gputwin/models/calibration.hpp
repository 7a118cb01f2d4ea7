#pragma once
// Calibration: the GPU compute model's parameters fitted to the measured op durations of captured traces
// (`gputwin calibrate`), and latency + bandwidth fits of their communication ops.
//
// Compute ops (kind compute, duration_ns > 0) fall into two classes, as in compute_duration_s. Every fit
// reproduces its class's total measured time exactly (what an iteration-time prediction needs; a plain
// least-squares fit of relative errors would under-predict noisy, long-tailed CPU durations) and spends its
// remaining freedom on the smallest squared relative error per op:
//   memory (no GEMM shape): t = kernel_overhead_s + bytes / (hbm_bytes_per_s x memory_efficiency)
//     -> the overhead in [0, mean duration] minimising the squared relative error (closed form), the
//        bandwidth then given by the total;
//   gemm: t = max(FLOPs / (peak x e_gemm), bytes / (hbm x memory_efficiency)) + kernel_overhead_s, with
//        e_gemm = gemm_efficiency x wave quantization x k / (k + gemm_k_half)
//     -> for each gemm_k_half of a grid (0 and 2^(j/4) = 1 ... 65536, then golden-section refinement around
//        the best) the gemm_efficiency that reproduces the total (bisection); the k_half with the smallest
//        squared relative error wins.
//   memory, per named kernel class (kernel_class.hpp; not `other`): the same rule on the class's ops, stored
//        as relative_efficiency and overhead_s on top of the global line (which stays the default for classes
//        without measurements; a class overhead below the global one lowers the global overhead to it).
//   The GEMMs' memory term streams at the elementwise class's bandwidth; with a GEMM table in the nominal model,
//   e_gemm is the table's (gpu_compute_model.hpp) and the analytic curve is fitted beside it for comparison
//   (fit row "gemm (analytic)"); rows "memory (one efficiency)" and "CLASS (one efficiency)" give the errors
//   without the classes.
// Overhead and memory efficiencies come from the memory classes and are then held fixed for the GEMMs. The
// nominal model fixes everything that is not fitted: peak, bandwidth, multiprocessors, tiles (wave
// quantization) and the GEMM table.
// Efficiencies are relative to the nominal peak and bandwidth, so they may exceed 1 (a CPU against a nominal
// peak): only their product with the nominal number (the effective throughput) has a physical meaning.
// Collectives: time = latency + bytes / bandwidth per (kind, group size), fitted the same way as the memory
// class (totals reproduced, latency >= 0); with a single size, a latency alone.
// Deterministic: the same traces give the same numbers.

#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/traces/collective_op.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gputwin {

// Measured against modelled durations of one class of ops ("gemm", "gemm (analytic)", "memory", "memory (one
// efficiency)"), of one kernel class ("softmax", "softmax (one efficiency)"), or of one op name within a class
// ("gemm:fc1", "memory:attn.softmax").
struct OpClassFit {
  std::string op_class;
  int64_t ops = 0;
  double mean_abs_relative_error = 0; // mean of |modelled - measured| / measured
  double max_abs_relative_error = 0;
  double measured_s = 0; // sum of the measured durations
  double modelled_s = 0; // sum of the fitted model's durations
};

// time = latency_s + bytes / bytes_per_s for one collective kind on groups of `ranks` ranks (send and recv ops
// are op SendRecv, ranks 2). bytes_per_s = 0: not fitted (a single size, or time not growing with size): the
// latency is then the mean time.
struct CollectiveFit {
  CollectiveOp op = CollectiveOp::AllReduce;
  int32_t ranks = 0;
  int64_t samples = 0; // ops with a measured duration
  double latency_s = 0;
  double bytes_per_s = 0;
  double mean_abs_relative_error = 0;
};

struct Calibration {
  GpuComputeModel gpu;                    // the nominal model with the fitted parameters
  std::vector<OpClassFit> fits;           // op classes, kernel classes (see OpClassFit), then per op name
  std::vector<CollectiveFit> collectives; // sorted by op, then ranks
  std::vector<std::string> notes;         // parameters kept at their nominal value, and why
  int64_t traces = 0;
};

// The nominal model of a CPU: peak 1e11 FLOP/s, 1e10 B/s, one multiprocessor, 1 x 1 tiles (no wave
// quantization), efficiencies 1, k_half 0, no overhead. Only a reference for the fitted efficiencies.
GpuComputeModel nominal_cpu_compute_model();

// Fits `nominal`'s gemm_efficiency, gemm_k_half, memory_efficiency and kernel_overhead_s to every compute op
// with a measured duration in `traces`, and latency/bandwidth per collective kind and group size. A class
// without measured ops keeps the nominal parameters (said in `notes`). REQUIRES: nominal peak_flops,
// hbm_bytes_per_s, multiprocessors and tiles > 0.
Calibration calibrate(const std::vector<traces::OpGraph>& traces, const GpuComputeModel& nominal);

} // namespace gputwin
