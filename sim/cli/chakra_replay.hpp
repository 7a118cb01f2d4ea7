#pragma once
// `gputwin replay` of a Chakra execution trace: the PyTorch host ET (JSON) or Chakra protobuf ET files
// (traces/chakra/README.md, "Import").

#include "gputwin/common/arg_parser.hpp"

#include <ostream>
#include <string>

namespace gputwin::cli {

// Replays the Chakra trace at `path` (`text`: its content, already read) and prints what was read, what was
// ignored and the simulated iteration time. Throws InputError for bad input and flags that do not apply.
int run_chakra_replay(const ParsedArgs& parsed, const std::string& path, const std::string& text, std::ostream& out);

} // namespace gputwin::cli
