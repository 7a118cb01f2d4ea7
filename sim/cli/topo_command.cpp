// `gputwin topo` -- written with the topology work (issue #3).
#include "commands.hpp"

#include "gputwin/models/input_error.hpp"

namespace gputwin::cli {

int run_topo(const std::vector<std::string>&, std::ostream&)
{
  throw InputError("topo: not built yet");
}

} // namespace gputwin::cli
