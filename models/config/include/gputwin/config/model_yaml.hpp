#pragma once
// Model description files:
//
//   name: my-13b          # optional; defaults to the file name without extension
//   hidden: 5120          # h
//   heads: 40             # a
//   layers: 40            # L
//   seq_len: 2048         # s, tokens
//   vocab: 51200          # v

#include "gputwin/models/gpt_config.hpp"

#include <string>

namespace gputwin::config {

// Loads and validates a model file; errors name FILE:LINE:COLUMN and the field.
GptConfig load_model_yaml(const std::string& path);

} // namespace gputwin::config
