#pragma once
// The guards' flags, shared by every command that simulates: --max-memory (resource_estimate.hpp) and --max-work
// (work_estimate.hpp).

#include "gputwin/common/arg_parser.hpp"
#include "gputwin/sim/resource_estimate.hpp"

#include <cstdint>
#include <string>

namespace gputwin::sim {

// `--max-memory SIZE`, declared on `parser`.
void add_max_memory_flag(cli::ArgParser& parser);

// The limit --max-memory gives (K/M/G/T binary multiples), else this machine's physical memory
// (host_physical_memory_bytes); 0 when neither is known (no guard).
int64_t max_memory_bytes(const cli::ParsedArgs& args);

// check_resources with the limit named as `args` gave it: --max-memory's, else this machine's memory.
void check_resources(const ResourceEstimate& estimate, int64_t limit_bytes, const cli::ParsedArgs& args,
                     const std::string& what);

// `--max-work N`, declared on `parser`.
void add_max_work_flag(cli::ArgParser& parser);

// The limit --max-work gives (a positive number, 1e9 accepted), else default_max_work.
double max_work(const cli::ParsedArgs& args);

} // namespace gputwin::sim
