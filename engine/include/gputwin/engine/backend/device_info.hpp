#pragma once
// The device a backend runs on, as the engine reports it (trace metadata) and checks it (memory before a plan
// is allocated): name, clocks and memory of a GPU; nothing for the host.

#include "gputwin/engine/backend/backend_factory.hpp"
#include <cstdint>
#include <optional>
#include <string>

namespace gputwin::engine {

struct DeviceDescription {
  std::string name;      // "NVIDIA H100 80GB HBM3"
  int compute_major = 0; // 9 = Hopper
  int compute_minor = 0;
  int multiprocessors = 0;
  int64_t memory_bytes = 0;      // total
  int64_t free_memory_bytes = 0; // free when asked (cudaMemGetInfo)
  int64_t sm_clock_khz = 0;      // peak SM clock
  int64_t memory_clock_khz = 0;  // peak memory clock
  int memory_bus_bits = 0;
};

// GPU `index` of backend `backend` ("cuda"); std::nullopt for "cpu". Throws InputError naming --backend where
// the backend's device cannot be reached (as check_backend_available).
std::optional<DeviceDescription> describe_device(BackendKind backend, int index = 0);

} // namespace gputwin::engine
