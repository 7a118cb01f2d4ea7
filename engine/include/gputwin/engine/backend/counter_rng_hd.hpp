#pragma once
// The counter RNG of counter_rng.hpp, callable from CUDA kernels as well as from the host: the same splitmix64
// finalizer and the same 24-bit uniform, so the CUDA backend draws the CPU backend's dropout masks bit for bit
// (tests/engine/cuda_kernels_test.cpp checks it on the device; counter_rng_hd_test checks it on the host).

#include <cstdint>

#if defined(__CUDACC__)
#define GPUTWIN_HD __host__ __device__ __forceinline__
#else
#define GPUTWIN_HD inline
#endif

namespace gputwin::engine::hd {

// splitmix64's finalizer; identical to gputwin::engine::mix64.
GPUTWIN_HD uint64_t mix64(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A uniform number in [0, 1) with 24 random bits for element `position` of stream `key`; identical to
// gputwin::engine::counter_uniform (a 24-bit integer times 2^-24 is exact in fp32 on both sides).
GPUTWIN_HD float counter_uniform(uint64_t key, uint64_t position)
{
  return static_cast<float>(mix64(key ^ mix64(position)) >> 40) * (1.0f / 16777216.0f);
}

} // namespace gputwin::engine::hd
