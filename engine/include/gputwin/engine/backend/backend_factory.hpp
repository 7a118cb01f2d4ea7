#pragma once
// Backends by kind, for --backend.

#include "gputwin/engine/backend/backend.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <memory>
#include <string>

namespace gputwin::engine {

enum class BackendKind { Cpu, Cuda };
std::string to_string(BackendKind kind); // "cpu", "cuda": the --backend spelling
// The --backend value `name`; throws InputError naming --backend for an unknown name.
BackendKind parse_backend(const std::string& name);

// Cpu -> the CPU reference backend, Cuda -> the CUDA backend on GPU 0. Throws InputError naming --backend
// for Cuda where it is not built or no GPU can be used.
std::unique_ptr<Backend> make_backend(BackendKind kind);
// Checks that the backend can be made (what make_backend would throw), before any rank starts.
void check_backend_available(BackendKind kind);
// Throws InputError naming the flag when backend `kind` cannot run `plan`: `--attention flash` needs a fused
// attention kernel, which the CUDA backend does not have yet.
void check_backend_supports_plan(BackendKind kind, const ParallelPlan& plan);
// Throws InputError for a model the backend has no kernels for (mixture of experts: the CPU backend only).
void check_backend_supports_model(BackendKind kind, const GptConfig& model);

} // namespace gputwin::engine
