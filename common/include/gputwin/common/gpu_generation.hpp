#pragma once
// The architecture generation of a GPU: what the built-in compute model and NCCL's tuning depend on (NCCL caps
// the bus bandwidth of sm_80 parts; the A100, H100/H200 and B200 compute models differ), stated in the cluster file
// (`gpu.generation`) instead of read out of the GPU's kind string. Header-only: topologies and models both use it.

#include <optional>
#include <string>

namespace gputwin {

enum class GpuGeneration {
  Ampere, // A100 (sm_80)
  Hopper, // H100, H200 (sm_90)
  Blackwell, // B200, GB200 (sm_100)
  Cpu,    // the host itself (the `localhost` cluster of CPU traces)
};

inline std::string to_string(GpuGeneration g)
{
  switch (g) {
  case GpuGeneration::Ampere: return "ampere";
  case GpuGeneration::Hopper: return "hopper";
  case GpuGeneration::Blackwell: return "blackwell";
  case GpuGeneration::Cpu: return "cpu";
  }
  return "?";
}

// "ampere", "hopper", "blackwell" or "cpu"; nothing for anything else.
inline std::optional<GpuGeneration> parse_gpu_generation(const std::string& text)
{
  for (const GpuGeneration g : {GpuGeneration::Ampere, GpuGeneration::Hopper, GpuGeneration::Blackwell, GpuGeneration::Cpu})
    if (text == to_string(g))
      return g;
  return std::nullopt;
}

// Hopper or later: Transformer Engine's stack (fused attention, Megatron-Core) is today's default there.
inline bool is_hopper_or_later(GpuGeneration g)
{
  return g == GpuGeneration::Hopper || g == GpuGeneration::Blackwell;
}

} // namespace gputwin
