#include "gputwin/engine/backend/backend_factory.hpp"

#include "gputwin/engine/backend/cpu_backend.hpp"
#include "gputwin/common/input_error.hpp"

#ifdef GPUTWIN_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#endif

namespace gputwin::engine {

std::string to_string(BackendKind kind)
{
  return kind == BackendKind::Cuda ? "cuda" : "cpu";
}

BackendKind parse_backend(const std::string& name)
{
  if (name == "cpu")
    return BackendKind::Cpu;
  if (name == "cuda")
    return BackendKind::Cuda;
#ifdef GPUTWIN_HAVE_CUDA
  throw InputError("--backend: unknown backend '" + name + "' (expected cpu or cuda)");
#else
  throw InputError("--backend: unknown backend '" + name + "' (expected cpu)");
#endif
}

void check_backend_available(BackendKind kind)
{
  if (kind == BackendKind::Cpu)
    return;
#ifdef GPUTWIN_HAVE_CUDA
  const std::string why = cuda_backend_unavailable_reason();
  if (!why.empty())
    throw InputError("--backend cuda: no usable GPU (" + why + ")");
#else
  throw InputError("--backend: the CUDA backend is not built yet (expected cpu)");
#endif
}

void check_backend_supports_plan(BackendKind kind, const ParallelPlan& plan)
{
  if (plan.attention == AttentionKernel::Flash && kind != BackendKind::Cpu)
    throw InputError("--attention flash: the " + to_string(kind) +
                     " backend has no fused attention kernel yet (expected --attention unfused, or --backend cpu)");
}

void check_backend_supports_model(BackendKind kind, const GptConfig& model)
{
  if (model.moe.enabled() && kind != BackendKind::Cpu)
    throw InputError("--num-experts: the " + to_string(kind) +
                     " backend has no mixture-of-experts kernels yet (expected --backend cpu)");
}

std::unique_ptr<Backend> make_backend(BackendKind kind)
{
  check_backend_available(kind);
#ifdef GPUTWIN_HAVE_CUDA
  if (kind == BackendKind::Cuda)
    return make_cuda_backend();
#endif
  return std::make_unique<CpuBackend>();
}

} // namespace gputwin::engine
