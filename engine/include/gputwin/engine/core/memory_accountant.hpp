#pragma once
// Counts every byte a rank allocates by what it is for, with the peak of each purpose and of the total:
// the engine's measured side of the memory model (models/memory_report.hpp). One per rank; not thread-safe
// (a rank's tensors live on its own thread).

#include <array>
#include <cstdint>
#include <string>

namespace gputwin::engine {

enum class MemoryPurpose {
  Weights,          // bf16 copies of the parameters the kernels read (2 bytes/parameter)
  Gradients,        // fp32 gradient accumulation buffer (4 bytes/parameter)
  Optimizer,        // fp32 master weights, Adam momentum and variance (12 bytes/parameter, /dp with ZeRO-1)
  LayerActivations, // what a transformer layer keeps from forward to backward (paper Table 2)
  EdgeActivations,  // kept outside the layers: embedding-dropout masks, token ids, final layernorm and
                    // output-layer inputs, fp32 logits (paper Section 4.2.3's extra terms)
  Workspace,        // transient: gradients of activations, recomputed activations, communication buffers
};
inline constexpr int memory_purpose_count = 6;

std::string to_string(MemoryPurpose p); // "weights", "gradients", ...

class MemoryAccountant {
public:
  void allocate(MemoryPurpose purpose, int64_t bytes);
  void release(MemoryPurpose purpose, int64_t bytes);

  int64_t current_bytes(MemoryPurpose purpose) const { return current_[index(purpose)]; }
  int64_t peak_bytes(MemoryPurpose purpose) const { return peak_[index(purpose)]; }
  int64_t current_total_bytes() const { return total_; }
  int64_t peak_total_bytes() const { return total_peak_; }
  // Sets every peak to the current value (e.g. after the first iteration's allocations).
  void reset_peaks();

private:
  static size_t index(MemoryPurpose p) { return static_cast<size_t>(p); }
  std::array<int64_t, memory_purpose_count> current_{}, peak_{};
  int64_t total_ = 0, total_peak_ = 0;
};

} // namespace gputwin::engine
