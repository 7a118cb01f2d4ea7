#pragma once
// Counter-based random numbers for dropout: a mask element is a pure function of (key, position), so the
// mask of any shard of a tensor (tensor, sequence or data parallel) is the same as in the unsharded run, and
// activation recompute regenerates it bit-exactly without storing RNG state (Korthikanti et al. 2022,
// Section 5: recompute must reproduce the forward's dropout). The mixer is splitmix64's finalizer. Callable
// from CUDA kernels too, so the CUDA backend draws the CPU backend's masks bit for bit (one definition).

#include <cstdint>

#if defined(__CUDACC__)
#define GPUTWIN_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define GPUTWIN_HOST_DEVICE inline
#endif

namespace gputwin::engine {

GPUTWIN_HOST_DEVICE uint64_t mix64(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A uniform number in [0, 1) with 24 random bits for element `position` of the stream `key`.
GPUTWIN_HOST_DEVICE float counter_uniform(uint64_t key, uint64_t position)
{
  return static_cast<float>(mix64(key ^ mix64(position)) >> 40) * (1.0f / 16777216.0f);
}

// Where dropout happens; one key per (seed, iteration, layer, site).
enum class DropoutSiteKind : uint64_t { Embedding = 1, AttentionProbs = 2, AttentionOutput = 3, MlpOutput = 4 };

inline uint64_t dropout_key(uint64_t seed, int64_t iteration, int64_t layer, DropoutSiteKind site)
{
  uint64_t k = mix64(seed);
  k = mix64(k ^ static_cast<uint64_t>(iteration));
  k = mix64(k ^ static_cast<uint64_t>(layer + 1));
  return mix64(k ^ static_cast<uint64_t>(site));
}

} // namespace gputwin::engine
