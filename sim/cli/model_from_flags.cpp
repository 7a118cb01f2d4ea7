#include "commands.hpp"

#include "gputwin/config/model_yaml.hpp"
#include "gputwin/models/plan_flags.hpp"

namespace gputwin::cli {

GptConfig model_from_flags(const ParsedArgs& args)
{
  return read_model(args, [](const std::string& path) { return config::load_model_yaml(path); });
}

} // namespace gputwin::cli
