#include "gputwin/models/comm_interference.hpp"

#include "gputwin/models/gpu_compute_model.hpp"

#include <algorithm>

namespace gputwin {

double interfered_duration_s(const GpuComputeModel& gpu, const traces::Op& op, const CommLoad& load)
{
  if (load.empty())
    return compute_duration_s(gpu, op);
  const double share = std::max(min_hbm_share, 1.0 - std::max(0.0, load.hbm_bytes_per_s) / gpu.hbm_bytes_per_s);
  if (op.gemm.m > 0 && op.gemm.n > 0 && op.gemm.k > 0) {
    // The communication's CTAs take SMs from the GEMM, beyond those already held back for it (comm_sms: TE's
    // userbuffers kernels run on the SMs the GEMM was launched without).
    const int sms = gpu.multiprocessors;
    const double taken =
        std::min(static_cast<double>(sms - 1), std::max(0, load.channels) * gpu.comm_interference.sms_per_channel);
    const double stream_bytes_per_s = memory_class_bytes_per_s(gpu, KernelClass::Elementwise);
    const double math_s = gemm_math_s(gpu, op, static_cast<int>(taken));
    // A quantized GEMM: the cast kernel before it (compute_duration_s), both at the HBM share.
    if (op.gemm.precision != traces::GemmPrecision::Bf16) {
      const double operand_bytes = quantized_gemm_operand_bytes(op.gemm);
      const double cast_bytes = std::max(0.0, op.bytes - operand_bytes);
      return std::max(math_s, operand_bytes / stream_bytes_per_s / share) + gemm_fixed_s(gpu, op.gemm) +
             (cast_bytes > 0 ? cast_bytes / stream_bytes_per_s / share + gpu.kernel_overhead_s : 0.0);
    }
    return std::max(math_s, op.bytes / stream_bytes_per_s / share) + gemm_fixed_s(gpu, op.gemm);
  }
  const MemoryClassParams c =
      gpu.memory_classes.empty() ? MemoryClassParams{} : memory_class_params(gpu, classify_kernel(op.name, false));
  return gpu.kernel_overhead_s + c.overhead_s +
         op.bytes / (gpu.hbm_bytes_per_s * gpu.memory_efficiency * c.relative_efficiency * share);
}

double interference_rate(const GpuComputeModel& gpu, const traces::Op& op, const CommLoad& load, double alone_s)
{
  if (load.empty())
    return 1.0;
  const double loaded_s = interfered_duration_s(gpu, op, load);
  if (!(alone_s > 0) || !(loaded_s > alone_s))
    return 1.0;
  return alone_s / loaded_s;
}

double interference_rate(const GpuComputeModel& gpu, const traces::Op& op, const CommLoad& load)
{
  return load.empty() ? 1.0 : interference_rate(gpu, op, load, compute_duration_s(gpu, op));
}

} // namespace gputwin
