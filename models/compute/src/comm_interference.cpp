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
    const int sms = gpu.multiprocessors;
    const double taken =
        std::min(static_cast<double>(sms - 1), std::max(0, load.channels) * gpu.comm_interference.sms_per_channel);
    const int left = std::max(1, static_cast<int>(sms - taken));
    const double memory_s = op.bytes / memory_class_bytes_per_s(gpu, KernelClass::Elementwise);
    double math_s = op.flops / (gemm_peak_flops(gpu, op.gemm) * modelled_gemm_efficiency(gpu, op.gemm));
    if (left < sms)
      math_s *= static_cast<double>(sms) / left * gemm_wave_utilization(gpu, op.gemm, sms) /
                gemm_wave_utilization(gpu, op.gemm, left);
    return std::max(math_s, memory_s / share) + gpu.kernel_overhead_s;
  }
  const MemoryClassParams c =
      gpu.memory_classes.empty() ? MemoryClassParams{} : memory_class_params(gpu, classify_kernel(op.name, false));
  return gpu.kernel_overhead_s + c.overhead_s +
         op.bytes / (gpu.hbm_bytes_per_s * gpu.memory_efficiency * c.relative_efficiency * share);
}

double interference_rate(const GpuComputeModel& gpu, const traces::Op& op, const CommLoad& load)
{
  if (load.empty())
    return 1.0;
  const double alone_s = compute_duration_s(gpu, op);
  const double loaded_s = interfered_duration_s(gpu, op, load);
  if (!(alone_s > 0) || !(loaded_s > alone_s))
    return 1.0;
  return alone_s / loaded_s;
}

} // namespace gputwin
