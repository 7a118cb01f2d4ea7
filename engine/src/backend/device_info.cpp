#include "gputwin/engine/backend/device_info.hpp"

#include "gputwin/engine/backend/backend_factory.hpp"
#include "gputwin/common/input_error.hpp"

#ifdef GPUTWIN_HAVE_CUDA
#include "cuda/device_query.hpp"
#endif

namespace gputwin::engine {

std::optional<DeviceDescription> describe_device(BackendKind backend, int index)
{
  check_backend_available(backend);
#ifdef GPUTWIN_HAVE_CUDA
  if (backend == BackendKind::Cuda) {
    const std::vector<CudaDeviceInfo> devices = query_cuda_devices();
    if (index < 0 || static_cast<size_t>(index) >= devices.size())
      throw InputError("--backend cuda: no GPU " + std::to_string(index) + " (" + std::to_string(devices.size()) +
                       " visible)");
    const CudaDeviceInfo& d = devices[static_cast<size_t>(index)];
    DeviceDescription out;
    out.name = d.name;
    out.compute_major = d.compute_major;
    out.compute_minor = d.compute_minor;
    out.multiprocessors = d.multiprocessors;
    out.memory_bytes = d.memory_bytes;
    out.free_memory_bytes = cuda_free_memory_bytes(index);
    out.sm_clock_khz = d.sm_clock_khz;
    out.memory_clock_khz = d.memory_clock_khz;
    out.memory_bus_bits = d.memory_bus_bits;
    return out;
  }
#endif
  (void)index;
  return std::nullopt;
}

} // namespace gputwin::engine
