#pragma once
// How much memory this machine has: what `gputwin` sizes its resource guard by (--max-memory's default) and what
// the engine's CPU backend checks a plan against before it allocates (as the CUDA backend checks the GPU's free
// memory). Linux: sysconf, /proc/meminfo and the cgroup (v1 or v2) limit of this process. Plain C++.

#include <cstdint>

namespace gputwin {

// Physical memory of the machine (sysconf), or the memory limit of this process's cgroup when that is lower;
// 0 when neither can be read.
int64_t host_physical_memory_bytes();

// Memory a new allocation can get now without swapping: /proc/meminfo's MemAvailable (sysconf's free pages
// where that is missing), capped by the cgroup's limit less its usage; 0 when unknown.
int64_t host_available_memory_bytes();

} // namespace gputwin
