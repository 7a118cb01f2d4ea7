#include "commands.hpp"

#include "gputwin/config/gpu_model_yaml.hpp"
#include "gputwin/config/model_yaml.hpp"
#include "gputwin/models/plan_flags.hpp"

namespace gputwin::cli {

GptConfig model_from_flags(const ParsedArgs& args)
{
  return read_model(args, [](const std::string& path) { return config::load_model_yaml(path); });
}

GpuComputeModel compute_model_from_flags(const ParsedArgs& args, const GpuComputeModel& fallback)
{
  if (const auto path = args.value("--gpu-model"))
    return config::load_gpu_model_yaml(*path);
  return fallback;
}

} // namespace gputwin::cli
