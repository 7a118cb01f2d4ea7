#pragma once
// Backends by name, for --backend.

#include "gputwin/engine/backend/backend.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <memory>
#include <string>

namespace gputwin::engine {

// "cpu" -> the CPU reference backend. Throws InputError naming --backend for "cuda" (not built yet) and for
// unknown names.
std::unique_ptr<Backend> make_backend(const std::string& name);
// Checks the name only (what make_backend would throw), before any rank starts.
void check_backend_name(const std::string& name);
// Throws InputError naming the flag when backend `name` cannot run `plan`: `--attention flash` needs a fused
// attention kernel, which the CUDA backend does not have yet.
void check_backend_supports_plan(const std::string& name, const ParallelPlan& plan);

} // namespace gputwin::engine
