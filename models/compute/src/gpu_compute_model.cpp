#include "gputwin/models/gpu_compute_model.hpp"

#include "gputwin/common/input_error.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gputwin {

namespace {

// The analytic curve's shape factor, wave quantization x k / (k + k_half), at real-valued coordinates.
double analytic_shape_factor(const GpuComputeModel& gpu, double m, double n, double k, double batch)
{
  const double tiles = std::ceil(m / gpu.gemm_tile_m) * std::ceil(n / gpu.gemm_tile_n) * batch;
  const double waves = std::ceil(tiles / gpu.multiprocessors);
  const double wave_utilization = tiles / (waves * gpu.multiprocessors);
  return wave_utilization * k / (k + gpu.gemm_k_half);
}

// NCCL's footprint on a GPU while it communicates, the same on A100 and H100 (sim/README.md, "Compute-communication
// interference"): every channel is one CTA of 512-640 threads (NCCL 2.12 src/include/devcomm.h,
// NCCL_*_MAX_NTHREADS; one block per channel, src/enqueue.cc) that a GEMM's CTAs cannot share an SM with, so one
// SM per channel -- an H100 all-gather's 24 CTAs push a 132-tile cuBLAS GEMM into a second wave and nearly double
// it (NVIDIA developer forum, "Compute-Communication Overlap Causes Severe GEMM Performance Degradation because
// of Tail Effect", 2025); Transformer Engine's userbuffers overlap likewise reserves up to 32 SMs for
// communication (UB_MAX_SM). Collectives use the channels NCCL gives their size (cluster `nccl:` channels,
// nccl_channels_used); a pipeline send or receive NCCL_NCHANNELS_PER_NET_PEER = 2 (NCCL's default). HBM: a ring
// reduction step writes the received chunk into the receiver's buffer, reads it and the local operand (3 bytes
// per byte received, as many sent as received: 1.5 per byte sent or received; all-gather 1): 1.5, set from NCCL's
// data path, not measured.
CommInterferenceParams nccl_interference(const std::string& gpu)
{
  CommInterferenceParams p;
  p.enabled = true;
  p.sms_per_channel = 1;
  p.p2p_channels = 2;
  p.hbm_bytes_per_comm_byte = 1.5;
  p.source = gpu + ": one SM per NCCL channel (one CTA per channel, NCCL enqueue.cc; H100 all-gather's 24 CTAs vs a "
                   "132-tile GEMM, NVIDIA forum 2025), 2 channels per send/recv (NCCL_NCHANNELS_PER_NET_PEER), 1.5 "
                   "HBM bytes per byte sent or received (NCCL ring reduce data path; set, not measured)";
  return p;
}

// The memory-bound kernel classes fit on the lent H100 (bandwidths 1.72 (layernorm), 1.43 (softmax), 2.71 (GeLU),
// 3.06 TB/s (copy); overheads 0, 0, 2.2 and 4.4 us), also used, not refit, for Blackwell.
std::map<KernelClass, MemoryClassParams> hopper_memory_classes()
{
  return {{KernelClass::LayerNorm, {1.019, 0}},
          {KernelClass::Softmax, {0.8454, 0}},
          {KernelClass::Gelu, {1.605, 2.211e-6}},
          {KernelClass::Elementwise, {1.812, 4.418e-6}}};
}

// B200 (sm_100, 148 SMs: NVIDIA Blackwell architecture technical brief; the driver reports 148, pytorch/ao pull
// request 4002). GEMM shape curve: XLA's B200 bf16 GEMM table (models/compute/data/b200_gemm_table.csv, openxla/xla
// 71feeddf: 375 shapes, b 1-4, m, n, k 256-4096, measured on a B200), wave quantization on 148 SMs beyond its grid.
// Fused attention: the H100 cuDNN curve scaled by peak (attention_throughput.hpp scales by peak / reference peak).
// Memory-bound classes, gemm_k_half and memory_efficiency: the H100 fit's, not refit (a grid over
// memory_efficiency 0.30-0.50 moved the dense MAPE below 1.2 points). One constant is fit: gemm_efficiency, the
// fraction of the 2250 TF/s peak the table's best shapes reach on the measured node, grid search in 0.005 steps on
// the iteration times of SimuMax's 24 dense B200 rows at seq 4096 (Llama 3 70B 12 layers and 405B 4 layers on one
// DGX B200, tests/data/simumax-b200-one-node; the 7 context-parallel rows and every MoE row held out): 0.50 (best
// shapes ~1125 TF/s; XLA's table peaks at 1670, 0.742 -- XLA measured a faster-clocked or less power-capped part):
// fit rows MAPE 3.57 %, CP rows 2.41 % (tests/cli/simumax_b200_dense_test.cpp). It was 0.485 (3.92 %, CP 1.05 %)
// before the iteration paid Megatron's gradient passes (WorkloadOptions::gradient_passes, 2026-11-29): with them
// 0.485 gave +1.5 % mean error. The fitted level agrees with SimuMax's own cuBLAS measurements on that node
// (MooreThreads/SimuMax configs/system/b200_bf16_ceperm.json, 514 Llama/DeepSeek matmul shapes at 0.39-0.65 of
// peak, overall factor 0.488). Before the B200 table (H100's XLA curve
// at B200's peak) the fit was 0.425 with fit-row MAPE 4.03 %, below what the node's own GEMMs reach: H100's shape
// curve made B200's mid-size GEMMs too fast. Checked, not fitted: SimuMax's 108 measured B200 grouped GEMMs, the
// experts of >= 1000 tokens 10.5 -> 9.6 % mean |error| (tests/models/simumax_grouped_gemm_test.cpp).
// GB200 (cluster gb200-nvl72; gpu.kind starting "gb" but not "gb300"): the B200 die's parameters -- 148
// SMs assumed as B200's, the same GEMM table -- against the cluster file's peaks (GB200 2450 / 4900 TF/s dense BF16
// / FP8), but their own level: the rack-scale parts run at 1200 W (GB200) instead of the HGX/DGX B200's 1000 W,
// and NVIDIA's GB200 NVL72 runs are far faster than SimuMax's power-capped B200 node predicts (0.50 left every
// NVIDIA GB200 row 21-34 % slow). gemm_efficiency 0.63, grid search in 0.01 steps on the 6 Nemotron-4 340B BF16
// GB200 rows of NVIDIA's dgxc-benchmarking v25.05.04 (tests/data/dgxc-dense: 128-512 GPUs, weak and strong
// scaling), simulated with their recipe (NeMo 25.04's performance scripts: BF16 gradient reduction, TE's fused
// cross entropy, CUDA graphs on GB200): mean |error| 1.63 % (1.74 % since the cluster's Grace hosts issue ops 1.9x as
// slowly, node.host_issue_scale; not refit); every other row held out
// (tests/cli/dgxc_dense_validation_test.cpp): Llama 3.1 405B BF16 on 128-512 GB200 within 3 % (+21..+23 % with
// 0.50), Grok-1 MoE on GB200 37.8 -> 4.8 % mean error with its recipe. The table's best shapes then reach 0.63 x
// 2450 = 1540 TF/s, 92 % of XLA's B200 measurements (1670), as the lent H100 reached 90.7 % of XLA's H100 table.
// GB300 takes Blackwell Ultra's level (below).
// B300 and GB300 (Blackwell Ultra: clusters dgx-b300 and gb300-nvl72, gpu.kind b300 / gb300, or any kind starting
// so): the same model with 160 SMs (NVIDIA technical blog "Inside NVIDIA Blackwell Ultra", developer.nvidia.com
// 2025-08: 160 SMs, 640 fifth-generation Tensor Cores) -- only wave quantization beyond the table's grid changes --
// against the cluster file's peaks (2250 / 4500 TF/s dense BF16 / FP8 for B300, 2500 / 5000 for GB300), with a
// GEMM level of its own, fitted on NVIDIA's B300 GEMM measurement (blackwell_ultra_gemm_efficiency_fit).
// Each kernel of a grouped GEMM (Transformer Engine's GroupedLinear: one cuBLAS GEMM per local expert, spread over
// a few streams; GemmShape::grouped) adds a fixed 5.5 us: the launch, fill and drain of a kernel that holds a
// fraction of the GPU. Fit (0.5 us steps): the value that leaves no mean log error over SimuMax's 108 grouped GEMMs
// measured on one B200 (tests/models/simumax_grouped_gemm_test.cpp; MooreThreads/SimuMax
// configs/system/b200_bf16_ceperm.json: 20-256 local experts of 128-9832 tokens): mean |log(model / measured)|
// 0.349 -> 0.144 (mean log -0.004), the experts of <= 308 tokens from 38-85 % short to within 19 % on average. It
// was 5 us with gemm_efficiency 0.485 (before the gradient passes moved that fit to 0.50). A property of the launch structure, not of the chip:
// assumed the same on Hopper and Ampere (no grouped GEMM measured there).
constexpr double grouped_gemm_kernel_fit_s = 5.5e-6;
// Hopper's FP8 dgrad and wgrad GEMMs with the split accumulator: Transformer Engine sets _2X_ACC_DGRAD and
// _2X_ACC_WGRAD (module/base.py; common/gemm/cublaslt_gemm.cu: CUBLASLT_MATMUL_DESC_FAST_ACCUM = 0 for them, 1 for
// the forward), and torchao, which makes the same choice, measured fast accumulation 1.1-1.2x faster on H100 FP8
// GEMMs (pytorch/ao issue 2377). Taken as the middle of that range, 1.15, not fitted; the tensor cores of sm_100
// accumulate in FP32 and have no such mode (TransformerEngine pull 2748: "there is no fastAccuMode for sm100").
// Checked: H100 FP8 NeMo runs, dgxc-dense Llama 3.1 405B -10.0 -> -4.3 %, Nemotron-4 340B -6.7 -> -1.6 %, 15B
// -14.8 -> -10.1 %; Nemotron 26 rows 7.56 -> 6.77 %; Grok-1 H100 FP8 -20.7 -> -16.3 %.
constexpr double hopper_fp8_split_accumulator_slowdown = 1.15;
// GB200 NVL72: the level fit to NVIDIA's GB200 rows (above).
constexpr double rack_scale_gemm_efficiency_fit = 0.63;
// Blackwell Ultra (B300, GB300): the level of NVIDIA's own B300 GEMM measurement. Transformer Engine's docs ("GEMM
// Speedups Across Precisions", docs/features/low_precision_training/speedups.rst and its figures
// gemm_profiling/img/b300_model_config_speedup*.png at NVIDIA/TransformerEngine d0067d0; benchmarks/gemm/
// benchmark_gemm.py on a B300 SXM6 AC) time the 12 BF16 GEMMs of a 5B layer (h 4096, I 16384, 31 x 512 tokens) at
// 13.4 ms and 12.9 ms in two runs; the B200 level (0.50) gives 18.0 ms. Fit: the level whose time is their
// geometric mean, 0.685 (0.005 steps) -- the GEMM level of a kernel benchmark, as H100's 0.7332 is.
constexpr double blackwell_ultra_gemm_efficiency_fit = 0.685;
// Block-scaled GEMMs run below the half- (MXFP8) or quarter-depth (NVFP4) rule (header, "Quantized GEMMs"): the
// same B300 measurement, pre-quantized operands, gives FP8 1.94x (the rule: 1.90x, checked, not fitted), MXFP8
// 1.74x and NVFP4 3.55x over BF16, where the rule gives 1.90x and 5.18x: the tensor cores read a scale factor per 32
// (MXFP8) or 16 (NVFP4) values besides the data. Fitted factors on the rule's efficiency, MXFP8 1.74 / 1.899 and
// NVFP4 3.55 / 5.181, applied on every Blackwell part (no other block-scaled GEMM measurement at hand).
constexpr double mxfp8_gemm_factor_fit = 0.916;
constexpr double nvfp4_gemm_factor_fit = 0.685;

bool is_blackwell_ultra(const std::string& gpu_kind)
{
  return gpu_kind.rfind("b300", 0) == 0 || gpu_kind.rfind("gb300", 0) == 0;
}

void set_blackwell_parameters(GpuComputeModel& m)
{
  m.multiprocessors = 148;
  m.gemm_efficiency = 0.50;     // fit (above): the table's best shapes at ~1125 TF/s on the measured node
  m.gemm_k_half = 316.8;        // the H100 fit's short-k penalty, not refit
  m.memory_efficiency = 0.5038; // the H100 fit's fraction of HBM, not refit
  m.kernel_overhead_s = 0;
  m.gemm_table = builtin_gemm_table("b200");
  m.gemm_table_ref = "builtin:b200";
  m.attention_throughput = builtin_attention_throughput("h100-cudnn");
  m.memory_classes = hopper_memory_classes();
  m.source = "B200: GEMM table measured on a B200 (XLA, openxla/xla 71feeddf); GEMM level fit to SimuMax's dense "
             "B200 iteration times (MooreThreads/SimuMax docs/b200, Llama 3 70B/405B rows); kernel classes: the "
             "H100 fit's";
  m.comm_interference = nccl_interference("B200 (148 SMs)");
  if (!is_blackwell_ultra(m.gpu_kind) && m.gpu_kind.rfind("gb", 0) == 0) { // GB200 NVL72 (above)
    m.gemm_efficiency = rack_scale_gemm_efficiency_fit;
    m.source = "GB200: B200 GEMM table (XLA, openxla/xla 71feeddf); GEMM level fit to NVIDIA's Nemotron-4 340B BF16 "
               "GB200 NVL72 step times (NVIDIA/dgxc-benchmarking v25.05.04); kernel classes: the H100 fit's";
  }
  if (is_blackwell_ultra(m.gpu_kind)) {
    m.multiprocessors = 160;
    m.gemm_efficiency = blackwell_ultra_gemm_efficiency_fit;
    m.source = "Blackwell Ultra: B200 GEMM table (XLA, openxla/xla 71feeddf), 160 SMs (NVIDIA's Blackwell Ultra "
               "technical blog); GEMM level fit to NVIDIA's B300 GEMM measurement (Transformer Engine docs, GEMM "
               "Speedups Across Precisions); kernel classes: the H100 fit's";
    m.comm_interference = nccl_interference("B300/GB300 (160 SMs)");
  }
}

} // namespace

GpuComputeModel builtin_compute_model(GpuGeneration generation, const std::string& gpu_kind, double peak_flops,
                                      double hbm_bytes_per_s, double peak_fp8_flops, double peak_fp4_flops)
{
  GpuComputeModel m;
  m.gpu_kind = gpu_kind;
  m.peak_flops = peak_flops;
  m.peak_fp8_flops = peak_fp8_flops; // FP8 and MXFP8 GEMMs: the efficiency of half the depth (header)
  m.peak_fp4_flops = peak_fp4_flops; // NVFP4 GEMMs: likewise
  m.hbm_bytes_per_s = hbm_bytes_per_s;
  if (generation == GpuGeneration::Ampere) {
    // gemm_efficiency and memory_efficiency are fit (grid search, 0.02 steps) to the forward and backward times
    // of Korthikanti et al. 2022 Table 4's baseline row (one 22B layer on 8 A100s, TP 8, no recompute: 7.7 and
    // 11.9 ms); the other four Table 4 rows and Table 5 are checked, not fit (tests/sim/validation). The
    // short-k penalty (k_half) and the per-kernel overhead are set, not fit. No A100 GEMM table or kernel-class
    // measurements exist: the analytic curve and one memory efficiency.
    m.multiprocessors = 108;
    m.gemm_efficiency = 0.76;
    m.gemm_k_half = 48;
    m.memory_efficiency = 0.72;
    m.kernel_overhead_s = 4e-6;
    m.source = "fit to Korthikanti et al. 2022 Table 4 (22B layer, A100)";
    m.comm_interference = nccl_interference("A100 (108 SMs)");
  } else if (generation == GpuGeneration::Hopper) {
    // GEMMs: the public H100 bf16 GEMM table (XLA's, models/compute/data/h100_gemm_table.csv) for the shape of the
    // efficiency curve; its level (gemm_efficiency), the short-k penalty used beyond the table's k range
    // (gemm_k_half) and the memory-bound classes fit by `gputwin calibrate --gpu h100` to
    // traces/captured/NVIDIA-H100-80GB-HBM3/kernels.trace.json: cuBLAS bf16 GEMMs of GPT layer shapes (Table
    // 3 models at tp 8, tp 1/2/4 layers) and PyTorch memory-bound kernels (copy, layernorm, GeLU, softmax),
    // measured on a lent H100 80GB HBM3 with scripts/gpu-measure-kernels.py (2026-11-22). Classes without
    // measurements (dropout, embedding, cross-entropy, optimizer) use memory_efficiency. Fit errors in
    // sim/README.md ("GPU compute model"). H200 (same SMs and clocks, faster HBM) uses the same numbers: not
    // measured.
    m.multiprocessors = 132;
    m.gemm_efficiency = 0.7332; // x the table's best 808.7 TFLOP/s / peak: this device reaches 90.7% of XLA's
    m.gemm_k_half = 316.8;
    m.memory_efficiency = 0.5038;
    m.kernel_overhead_s = 0;
    m.gemm_table = builtin_gemm_table("h100");
    m.gemm_table_ref = "builtin:h100";
    // Fused attention: cuDNN's measured curve on H100 (attention_throughput.hpp).
    m.attention_throughput = builtin_attention_throughput("h100-cudnn");
    // Bandwidths 1.72 (layernorm), 1.43 (softmax), 2.71 (GeLU), 3.06 TB/s (copy: elementwise streaming, also
    // the GEMMs' memory term); overheads 0, 0, 2.2 and 4.4 us.
    m.memory_classes = hopper_memory_classes();
    m.source = "GEMM table: XLA's H100 measurements; level and kernel classes fit to cuBLAS/PyTorch kernels "
               "measured on an H100 (traces/captured/NVIDIA-H100-80GB-HBM3)";
    m.comm_interference = nccl_interference("H100/H200 (132 SMs)");
    m.fp8_split_accumulator_slowdown = hopper_fp8_split_accumulator_slowdown;
  } else if (generation == GpuGeneration::Blackwell) {
    set_blackwell_parameters(m);
  } else {
    throw std::invalid_argument("no built-in compute model for GPU '" + gpu_kind + "' of generation " +
                                to_string(generation) + " (expected ampere, hopper or blackwell)");
  }
  m.grouped_gemm_kernel_s = grouped_gemm_kernel_fit_s;
  return m;
}

GpuComputeModel nominal_roofline_model(const std::string& kind, double peak_flops, double hbm_bytes_per_s,
                                       const std::string& source)
{
  GpuComputeModel m;
  m.gpu_kind = kind;
  m.peak_flops = peak_flops;
  m.hbm_bytes_per_s = hbm_bytes_per_s;
  m.multiprocessors = 1;
  m.gemm_tile_m = 1;
  m.gemm_tile_n = 1;
  m.gemm_efficiency = 1;
  m.gemm_k_half = 0;
  m.memory_efficiency = 1;
  m.kernel_overhead_s = 0;
  m.source = source;
  return m;
}

double gemm_efficiency(const GpuComputeModel& gpu, const traces::GemmShape& shape)
{
  return gpu.gemm_efficiency * analytic_shape_factor(gpu, static_cast<double>(shape.m), static_cast<double>(shape.n),
                                                     static_cast<double>(shape.k), static_cast<double>(shape.batch));
}

double gemm_wave_utilization(const GpuComputeModel& gpu, const traces::GemmShape& shape, int multiprocessors)
{
  const double tiles = std::ceil(static_cast<double>(shape.m) / gpu.gemm_tile_m) *
                       std::ceil(static_cast<double>(shape.n) / gpu.gemm_tile_n) * static_cast<double>(shape.batch);
  const double waves = std::ceil(tiles / multiprocessors);
  return waves > 0 ? tiles / (waves * multiprocessors) : 1.0;
}

traces::GemmShape bf16_equivalent_shape(const traces::GemmShape& shape)
{
  const int64_t depth_divisor = shape.precision == traces::GemmPrecision::Nvfp4 ? 4
                                : shape.precision == traces::GemmPrecision::Bf16 ? 1
                                                                                : 2; // FP8, MXFP8
  traces::GemmShape equivalent = shape;
  equivalent.k = (shape.k + depth_divisor - 1) / depth_divisor;
  equivalent.precision = traces::GemmPrecision::Bf16;
  return equivalent;
}

double block_scaled_gemm_factor(traces::GemmPrecision precision)
{
  return precision == traces::GemmPrecision::Mxfp8   ? mxfp8_gemm_factor_fit
         : precision == traces::GemmPrecision::Nvfp4 ? nvfp4_gemm_factor_fit
                                                     : 1.0;
}

double modelled_gemm_efficiency(const GpuComputeModel& gpu, const traces::GemmShape& given)
{
  const traces::GemmShape shape = bf16_equivalent_shape(given);
  const double block_scaled = block_scaled_gemm_factor(given.precision);
  if (!gpu.gemm_table)
    return gemm_efficiency(gpu, shape) * block_scaled;
  const GemmTable& table = *gpu.gemm_table;
  const GemmPoint edge = table.edge(shape);
  const double at_edge = table.flops_per_s(edge) / table.max_flops_per_s();
  const double curve_ratio =
      analytic_shape_factor(gpu, static_cast<double>(shape.m), static_cast<double>(shape.n),
                            static_cast<double>(shape.k), static_cast<double>(shape.batch)) /
      analytic_shape_factor(gpu, edge.m, edge.n, edge.k, edge.batch);
  return gpu.gemm_efficiency * at_edge * curve_ratio * block_scaled;
}

namespace {

[[noreturn]] void throw_no_fp8_peak(const GpuComputeModel& gpu, const std::string& what)
{
  throw InputError(what + ": an FP8 GEMM, but the GPU model '" + gpu.gpu_kind +
                   "' has no FP8 peak (expected an H100 or H200 cluster, or a --gpu-model with peak_fp8_flops_per_s)");
}

[[noreturn]] void throw_no_fp4_peak(const GpuComputeModel& gpu, const std::string& what)
{
  throw InputError(what + ": an NVFP4 GEMM, but the GPU model '" + gpu.gpu_kind +
                   "' has no FP4 peak (expected a Blackwell cluster with gpu.peak_fp4_tflops, or a --gpu-model with "
                   "peak_fp4_flops_per_s)");
}

// The peak of `precision` on `gpu`, or the error naming `what` where the model has none.
double precision_peak_flops(const GpuComputeModel& gpu, traces::GemmPrecision precision, const std::string& what)
{
  switch (precision) {
  case traces::GemmPrecision::Bf16: return gpu.peak_flops;
  case traces::GemmPrecision::Fp8:
  case traces::GemmPrecision::Mxfp8:
    if (!(gpu.peak_fp8_flops > 0))
      throw_no_fp8_peak(gpu, what);
    return gpu.peak_fp8_flops;
  case traces::GemmPrecision::Nvfp4:
    if (!(gpu.peak_fp4_flops > 0))
      throw_no_fp4_peak(gpu, what);
    return gpu.peak_fp4_flops;
  }
  return gpu.peak_flops;
}

} // namespace

double gemm_peak_flops(const GpuComputeModel& gpu, const traces::GemmShape& shape)
{
  if (shape.precision == traces::GemmPrecision::Bf16)
    return gpu.peak_flops;
  return precision_peak_flops(gpu, shape.precision,
                              "GEMM " + std::to_string(shape.m) + " x " + std::to_string(shape.n) + " x " +
                                  std::to_string(shape.k));
}

MemoryClassParams memory_class_params(const GpuComputeModel& gpu, KernelClass c)
{
  const auto it = gpu.memory_classes.find(c);
  return it == gpu.memory_classes.end() ? MemoryClassParams{} : it->second;
}

double memory_class_bytes_per_s(const GpuComputeModel& gpu, KernelClass c)
{
  return gpu.hbm_bytes_per_s * gpu.memory_efficiency * memory_class_params(gpu, c).relative_efficiency;
}

double quantized_gemm_operand_bytes(const traces::GemmShape& g)
{
  const double m = static_cast<double>(g.m), n = static_cast<double>(g.n), k = static_cast<double>(g.k);
  return ((m * k + k * n) * traces::quantized_element_bytes(g.precision) + 2.0 * m * n) * static_cast<double>(g.batch);
}

double gemm_math_s(const GpuComputeModel& gpu, const traces::Op& op, int sms_taken)
{
  double math_s = op.flops / (gemm_peak_flops(gpu, op.gemm) * modelled_gemm_efficiency(gpu, op.gemm));
  // Per-tensor FP8 gradient GEMMs accumulate in split mode (fp8_split_accumulator_slowdown): dgrad and wgrad ops.
  if (op.gemm.precision == traces::GemmPrecision::Fp8 && gpu.fp8_split_accumulator_slowdown != 1 &&
      (op.name.find("dgrad") != std::string::npos || op.name.find("wgrad") != std::string::npos))
    math_s *= gpu.fp8_split_accumulator_slowdown;
  const bool flash_forward = op.name == "attn.flash.fwd";
  if (gpu.attention_throughput != nullptr && (flash_forward || op.name == "attn.flash.bwd")) {
    const traces::GemmShape& g = op.gemm;
    const double benchmark_flops = causal_benchmark_flops(static_cast<double>(g.m), static_cast<double>(g.n),
                                                          static_cast<double>(g.k), static_cast<double>(g.batch),
                                                          flash_forward);
    math_s = std::max(math_s, benchmark_flops / gpu.attention_throughput->flops_per_s(
                                                    static_cast<double>(g.k), static_cast<double>(g.n),
                                                    flash_forward, gpu.peak_flops));
  }
  // Fewer SMs: the same tiles over S' SMs (throughput S'/S, re-quantised into waves of S').
  const int sms = gpu.multiprocessors;
  const int left = std::max(1, sms - std::max(0, std::max(sms_taken, op.gemm.comm_sms)));
  if (left < sms)
    math_s *= static_cast<double>(sms) / left * gemm_wave_utilization(gpu, op.gemm, sms) /
              gemm_wave_utilization(gpu, op.gemm, left);
  return math_s;
}

double gemm_fixed_s(const GpuComputeModel& gpu, const traces::GemmShape& shape)
{
  return gpu.kernel_overhead_s +
         (shape.grouped ? static_cast<double>(shape.batch) * gpu.grouped_gemm_kernel_s : 0.0);
}

double compute_duration_s(const GpuComputeModel& gpu, const traces::Op& op)
{
  if (op.gemm.m > 0 && op.gemm.n > 0 && op.gemm.k > 0) {
    const bool quantized = op.gemm.precision != traces::GemmPrecision::Bf16;
    if (quantized) // named by the op here; gemm_peak_flops knows only the shape
      precision_peak_flops(gpu, op.gemm.precision, "op '" + op.name + "'");
    const double stream_bytes_per_s = memory_class_bytes_per_s(gpu, KernelClass::Elementwise);
    if (quantized) {
      // Transformer Engine quantizes the bf16 operand in its own kernel (cast_transpose; MXFP8/NVFP4: the quantize
      // kernel that also writes the block scales) before the GEMM: the bytes beyond the GEMM's own quantized
      // operands and bf16 output are that kernel's, serial with the GEMM.
      const double operand_bytes = quantized_gemm_operand_bytes(op.gemm);
      const double cast_bytes = std::max(0.0, op.bytes - operand_bytes);
      return std::max(gemm_math_s(gpu, op, 0), operand_bytes / stream_bytes_per_s) + gemm_fixed_s(gpu, op.gemm) +
             (cast_bytes > 0 ? cast_bytes / stream_bytes_per_s + gpu.kernel_overhead_s : 0.0);
    }
    const double memory_s = op.bytes / stream_bytes_per_s;
    return std::max(gemm_math_s(gpu, op, 0), memory_s) + gemm_fixed_s(gpu, op.gemm);
  }
  // Classifying by name costs a string scan: only when the model distinguishes classes.
  const MemoryClassParams c = gpu.memory_classes.empty() ? MemoryClassParams{}
                                                         : memory_class_params(gpu, classify_kernel(op.name, false));
  return gpu.kernel_overhead_s + c.overhead_s +
         op.bytes / (gpu.hbm_bytes_per_s * gpu.memory_efficiency * c.relative_efficiency);
}

} // namespace gputwin
