#pragma once
// Sizes as nccl-tests writes them: 1048576, 512K, 64M, 8G (binary multiples: K = 1024).

#include <cstdint>
#include <string>
#include <vector>

namespace gputwin::cli {

// Parses `text` as a size in bytes; throws InputError naming `flag` otherwise.
int64_t parse_byte_size(const std::string& flag, const std::string& text);

// "MIN:MAX" (and optionally ":FACTOR", default 2): MIN, MIN*F, ... up to MAX, as nccl-tests' -b/-e/-f.
std::vector<int64_t> parse_size_sweep(const std::string& flag, const std::string& text);

} // namespace gputwin::cli
