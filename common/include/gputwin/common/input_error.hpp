#pragma once
// The one exception type for bad user input (flags, model files, plans).
//
// Its message is a single line that already names where the problem is (`--tp`, `file.yaml:3:8: hidden`)
// and what was expected; the CLI prints it after "error: " and exits non-zero.

#include <stdexcept>
#include <string>

namespace gputwin {

class InputError : public std::runtime_error {
public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
};

} // namespace gputwin
