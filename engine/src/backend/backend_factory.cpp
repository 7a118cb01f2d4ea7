#include "gputwin/engine/backend/backend_factory.hpp"

#include "gputwin/engine/backend/cpu_backend.hpp"
#include "gputwin/models/input_error.hpp"

#ifdef GPUTWIN_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#endif

namespace gputwin::engine {

void check_backend_name(const std::string& name)
{
  if (name == "cpu")
    return;
#ifdef GPUTWIN_HAVE_CUDA
  if (name == "cuda") {
    const std::string why = cuda_backend_unavailable_reason();
    if (!why.empty())
      throw InputError("--backend cuda: no usable GPU (" + why + ")");
    return;
  }
  throw InputError("--backend: unknown backend '" + name + "' (expected cpu or cuda)");
#else
  if (name == "cuda")
    throw InputError("--backend: the CUDA backend is not built yet (expected cpu)");
  throw InputError("--backend: unknown backend '" + name + "' (expected cpu)");
#endif
}

void check_backend_supports_plan(const std::string& name, const ParallelPlan& plan)
{
  if (plan.attention == AttentionKernel::Flash && name != "cpu")
    throw InputError("--attention flash: the " + name +
                     " backend has no fused attention kernel yet (expected --attention unfused, or --backend cpu)");
}

std::unique_ptr<Backend> make_backend(const std::string& name)
{
  check_backend_name(name);
#ifdef GPUTWIN_HAVE_CUDA
  if (name == "cuda")
    return make_cuda_backend();
#endif
  return std::make_unique<CpuBackend>();
}

} // namespace gputwin::engine
