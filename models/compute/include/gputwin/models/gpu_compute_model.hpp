#pragma once
// How long a compute op takes on a GPU: a roofline with a shape-dependent efficiency for GEMMs (an analytic
// curve, or a measured GEMM table where the model has one) and a bandwidth efficiency per kernel class for
// memory-bound kernels, plus a fixed per-kernel overhead. The parameters are plain numbers so that a fit to
// measured traces (gputwin calibrate) can replace them.
//
//   GEMM-shaped ops:  t = max(FLOPs / (peak x e_gemm), bytes / (HBM x e_stream)) + kernel_overhead_s
//     analytic:  e_gemm = gemm_efficiency x wave quantization x k / (k + gemm_k_half)
//     table:     e_gemm = gemm_efficiency x table(edge) / table max x analytic(shape) / analytic(edge)
//                (edge = the shape itself inside the table's grid, where the ratio is 1; outside it the nearest
//                grid point, so table and curve agree at the grid's edge -- gemm_table.hpp)
//     e_stream = memory_efficiency x the elementwise class's relative efficiency: a GEMM's operand traffic
//                streams like a copy (attention products with a head-dimension side are bound by it)
//   fused attention (attn.flash.*) with a measured curve: t = max(the GEMM rule, F / throughput(seq))
//     (attention_throughput.hpp)
//   memory-bound ops of kernel class c (kernel_class.hpp):
//     t = kernel_overhead_s + overhead_s[c] + bytes / (HBM x memory_efficiency x relative_efficiency[c])
//
// gemm_efficiency keeps its meaning with a table: the fraction of peak the best-shaped GEMMs reach; the table
// gives how much less other shapes reach. memory_efficiency is a global multiplier: a class's bandwidth is
// relative to it (a class not listed: relative 1), so scaling memory_efficiency scales every class and the
// GEMMs' memory term; kernel_overhead_s is added to every kernel, a class's overhead_s on top of it.
//
// Quantized GEMMs. FP8 and MXFP8 GEMMs run against `peak_fp8_flops`, NVFP4 GEMMs against `peak_fp4_flops`, with
// the efficiency of the bf16 GEMM of the same m, n and batch and depth k / 2 (FP8, MXFP8) or k / 4 (NVFP4)
// (bf16_equivalent_shape). Why: the tensor cores do twice (four times) the bf16 FLOPs per operand byte and per
// clock, so a tile's main loop over k takes what a bf16 loop over k / 2 (k / 4) takes -- the same bytes through
// shared memory, the same number of MMA issue slots -- while the per-tile work that does not scale with k
// (prologue, epilogue writing the bf16 output tile, wave quantization) stays what it is: short-k quantized GEMMs
// are further below their peak than bf16 ones of the same shape. Large shapes reach the bf16 fraction of the
// (2x) peak. Checked, not fitted (tests/models/fp8_compute_model_test.cpp): FP8 GEMMs measured on an H800 SXM
// (H100's SMs and clocks), m = n = 8192, k 256-16384, 376-1523 TFLOP/s (tile-ai/tilelang
// benchmark/matmul_fp8/README.md, MIT; tests/data/h800-fp8-gemm): the modelled times are within 5 % for k >= 1024
// and 12-17 % short at k 512 and 256, where the old rule (the bf16 efficiency of the same depth) was 24-47 % short
// at k <= 1024; and XLA's B200 GEMM tables (openxla/xla 71feeddf, tests/data/xla-b200-gemm): the rule applied to
// the measured bf16 table gives the measured FP8 table's 300 shapes of k >= 512 with a mean |log error| of 0.059
// (bias +0.001), the old rule 0.421. NVFP4's k / 4 is the same argument, not measured here; NVIDIA's
// "Boosting Matrix Multiplication Speed and Flexibility with NVIDIA cuBLAS 12.9" (developer.nvidia.com, 2025)
// reports block-scaled FP4 matmuls up to 2.3x faster than FP8 ones on Blackwell (the peaks' ratio is 2x).

#include "gputwin/models/attention_throughput.hpp"
#include "gputwin/models/comm_interference.hpp"
#include "gputwin/models/gemm_table.hpp"
#include "gputwin/common/gpu_generation.hpp"
#include "gputwin/models/kernel_class.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <map>
#include <memory>
#include <string>

namespace gputwin {

// Memory-bound kernels of one class, relative to the model's global parameters.
struct MemoryClassParams {
  double relative_efficiency = 1; // bandwidth = HBM x memory_efficiency x this
  double overhead_s = 0;          // added to kernel_overhead_s for kernels of this class
};

struct GpuComputeModel {
  std::string gpu_kind;
  double peak_flops = 0;      // dense bf16 tensor-core peak, FLOP/s
  double peak_fp8_flops = 0;  // dense FP8 tensor-core peak, FLOP/s; 0 = none (A100, CPU): FP8 GEMMs are an error
  double peak_fp4_flops = 0;  // dense NVFP4 tensor-core peak, FLOP/s; 0 = none (before Blackwell): NVFP4 GEMMs are an
                              // error
  double hbm_bytes_per_s = 0; // HBM bandwidth
  int multiprocessors = 0;    // SMs: GEMM tiles are scheduled in waves of this many
  double gemm_tile_m = 128;   // output tile of the GEMM kernels (cuBLAS/CUTLASS bf16 on sm_80/sm_90)
  double gemm_tile_n = 128;
  double gemm_efficiency = 0;   // fraction of peak a large, well-shaped GEMM reaches
  double gemm_k_half = 0;       // inner dimension at which a GEMM reaches half its efficiency (short-k penalty)
  double memory_efficiency = 0; // fraction of HBM bandwidth memory-bound kernels reach (every class scales it)
  double kernel_overhead_s = 0; // launch and tail per kernel
  // Fixed time each product of a grouped GEMM adds (GemmShape::grouped: one kernel per local expert): the launch,
  // fill and drain of a kernel that holds a fraction of the GPU. Fit on measured B200 grouped GEMMs (source).
  double grouped_gemm_kernel_s = 0;
  // How much slower a per-tensor FP8 dgrad or wgrad GEMM runs than the FP8 rule (fitted on fast-accumulating
  // kernels) says: Transformer Engine runs them with cuBLASLt's split accumulator (CUBLASLT_MATMUL_DESC_FAST_ACCUM
  // 0: the partial sums promoted to FP32 periodically), which costs time on Hopper only. 1: no slowdown.
  double fp8_split_accumulator_slowdown = 1;
  std::string source;           // which measurements the parameters were fit to
  // Measured GEMM throughput (gemm_table.hpp); null: the analytic curve alone. gemm_table_ref says where it
  // came from as a model file names it: "builtin:h100", or a path relative to the model file.
  std::shared_ptr<const GemmTable> gemm_table;
  std::string gemm_table_ref;
  // Memory-bound kernel classes with their own bandwidth and overhead; a class not here uses the globals.
  std::map<KernelClass, MemoryClassParams> memory_classes;
  // How overlapped NCCL communication slows this GPU's kernels (comm_interference.hpp); disabled: not at all.
  CommInterferenceParams comm_interference;
  // Measured fused-attention throughput (attention_throughput.hpp) that times attn.flash.* ops, never faster
  // than the GEMM rule; null: the GEMM rule alone. A model file names it `attention_throughput: builtin:NAME`.
  const AttentionThroughput* attention_throughput = nullptr;
};

// The built-in model of a GPU generation (Ampere: the A100's; Hopper: the H100's, also for the H200; Blackwell: the
// B200's, with 160 SMs for a Blackwell Ultra `gpu_kind` starting "b300" or "gb300"), named `gpu_kind`
// ("a100-sxm4-80gb", ...), with the cluster file's peaks and HBM bandwidth (peak_fp8_flops 0: the cluster's GPU has
// no FP8 tensor cores; peak_fp4_flops 0: no FP4 ones). Throws std::invalid_argument for a generation without one
// (Cpu).
GpuComputeModel builtin_compute_model(GpuGeneration generation, const std::string& gpu_kind, double peak_flops,
                                      double hbm_bytes_per_s, double peak_fp8_flops = 0, double peak_fp4_flops = 0);

// A plain roofline at `peak_flops` and `hbm_bytes_per_s`: efficiencies 1, no overhead, one "multiprocessor"
// with 1 x 1 tiles (no wave quantization) -- the reference for devices without a built-in model (a CPU).
GpuComputeModel nominal_roofline_model(const std::string& kind, double peak_flops, double hbm_bytes_per_s,
                                       const std::string& source);

// Fraction of the peak a GEMM of this shape reaches on the analytic curve: efficiency x wave quantization x
// k / (k + k_half), whether or not the model has a table.
double gemm_efficiency(const GpuComputeModel& gpu, const traces::GemmShape& shape);

// Wave quantization of a GEMM of this shape on `multiprocessors` SMs: tiles / (waves x multiprocessors), the
// gemm_tile_m x gemm_tile_n output tiles scheduled in waves of one per SM. REQUIRES: multiprocessors >= 1.
double gemm_wave_utilization(const GpuComputeModel& gpu, const traces::GemmShape& shape, int multiprocessors);

// The bf16 GEMM whose efficiency a quantized GEMM shares (header, "Quantized GEMMs"): the same m, n and batch,
// depth k / 2 for FP8 and MXFP8, k / 4 for NVFP4 (rounded up); a bf16 shape is itself.
traces::GemmShape bf16_equivalent_shape(const traces::GemmShape& shape);

// What a block-scaled GEMM reaches of the bf16-equivalent-depth rule: MXFP8 0.916, NVFP4 0.685, fitted on NVIDIA's
// B300 GEMM measurement (gpu_compute_model.cpp); 1 for bf16 and per-tensor FP8.
double block_scaled_gemm_factor(traces::GemmPrecision precision);

// Fraction of its precision's peak a GEMM of this shape reaches under the model: the table rule above when the
// model has a table, else gemm_efficiency(), read at bf16_equivalent_shape(shape), times
// block_scaled_gemm_factor. REQUIRES: m, n, k > 0.
double modelled_gemm_efficiency(const GpuComputeModel& gpu, const traces::GemmShape& shape);

// The tensor-core peak, FLOP/s, a GEMM of this shape runs against: peak_fp8_flops for an FP8 or MXFP8 GEMM,
// peak_fp4_flops for an NVFP4 one, else peak_flops. Throws InputError for a GEMM whose peak the model lacks
// (plans are checked before they get here; a trace's FP8 GEMMs replayed on an A100 are not).
double gemm_peak_flops(const GpuComputeModel& gpu, const traces::GemmShape& shape);

// HBM bytes of a quantized (FP8, MXFP8, NVFP4) GEMM's own operands: A and B in the precision's element size with
// their block scales (quantized_element_bytes), bf16 C. A quantized op's bytes beyond these are the cast
// (Transformer Engine's cast_transpose, or the MXFP8/NVFP4 quantize kernel writing both the row-wise and the
// column-wise copy with their scales), timed as a memory-bound kernel before the GEMM:
//   t = max(math, operand bytes / stream bandwidth) + overhead + cast bytes / stream bandwidth + overhead.
double quantized_gemm_operand_bytes(const traces::GemmShape& g);

// Fixed seconds a GEMM-shaped op adds beyond its math and bytes: kernel_overhead_s, and with GemmShape::grouped
// grouped_gemm_kernel_s for each of its `batch` kernels.
double gemm_fixed_s(const GpuComputeModel& gpu, const traces::GemmShape& shape);

// Math seconds of a GEMM-shaped op with `sms_taken` SMs (or its own gemm.comm_sms, whichever is more) left to
// other kernels: FLOPs / (peak x modelled efficiency), no faster than the fused-attention curve for attn.flash.*,
// times S / S' x wave(S) / wave(S') on S' = S - taken SMs. REQUIRES: op.gemm m, n, k > 0.
double gemm_math_s(const GpuComputeModel& gpu, const traces::Op& op, int sms_taken);

// The parameters memory-bound kernels of class `c` use (relative 1, overhead 0 for a class not listed).
MemoryClassParams memory_class_params(const GpuComputeModel& gpu, KernelClass c);

// Bandwidth, bytes/s, that memory-bound kernels of class `c` reach: HBM x memory_efficiency x relative.
double memory_class_bytes_per_s(const GpuComputeModel& gpu, KernelClass c);

// Duration of compute op `op` (its FLOPs, bytes, GEMM shape and name) on `gpu`, seconds.
double compute_duration_s(const GpuComputeModel& gpu, const traces::Op& op);

} // namespace gputwin
