#include "gputwin/engine/backend/backend_factory.hpp"

#include "gputwin/engine/backend/cpu_backend.hpp"
#include "gputwin/models/input_error.hpp"

namespace gputwin::engine {

void check_backend_name(const std::string& name)
{
  if (name == "cpu")
    return;
  if (name == "cuda")
    throw InputError("--backend: the CUDA backend is not built yet (expected cpu)");
  throw InputError("--backend: unknown backend '" + name + "' (expected cpu)");
}

std::unique_ptr<Backend> make_backend(const std::string& name)
{
  check_backend_name(name);
  return std::make_unique<CpuBackend>();
}

} // namespace gputwin::engine
