#pragma once
// Framework profiles (models/framework_profile.hpp) as YAML: a file of its own for `--framework FILE`, or the
// `framework:` section of a model file written by `gputwin calibrate --iterations`.
//
//   name: "megatron-deepspeed"
//   source: "fit to ... by gputwin calibrate --iterations"
//   kernel_issue_s: 9e-06          # host seconds to issue one memory-bound kernel
//   gemm_issue_s: 1.4e-05          # ... one GEMM
//   collective_issue_s: 2.5e-05    # ... one NCCL collective
//   p2p_issue_s: 6e-05             # ... one pipeline send or receive
//   microbatch_issue_s: 0.0004     # once per micro-batch step of the schedule
//   iteration_issue_s: 0.005       # once per iteration, before the optimizer
//   launch_latency_s: 4e-06        # launch call -> earliest start on the GPU
//   sync_after_p2p: true           # the host waits for the GPU after each pipeline transfer
//   sync_before_optimizer: true    # ... before the optimizer
//
// Every number is required (>= 0); the booleans default to false; unknown fields are errors.

#include "gputwin/common/yaml_fields.hpp"
#include "gputwin/models/framework_profile.hpp"

#include <ostream>
#include <string>

namespace gputwin::config {

// The profile in mapping `map` of `file`. Throws InputError "FILE:LINE:COLUMN: field: ...".
FrameworkProfile read_framework_profile(const YamlFile& file, const YAML::Node& map);

// Writes `profile` as the fields above, each line prefixed by `indent`.
void write_framework_profile(std::ostream& out, const FrameworkProfile& profile, const std::string& indent = "");

// True when a `--framework` value names a file (a path or a .yaml name), false for a built-in profile's name.
bool names_framework_file(const std::string& name_or_path);

// `--framework` values: a built-in name, a framework .yaml file, or a model file with a `framework:` section.
FrameworkProfile load_framework_profile(const std::string& name_or_path, const std::string& flag = "--framework");

} // namespace gputwin::config
