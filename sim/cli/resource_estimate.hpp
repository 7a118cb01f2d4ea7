#pragma once
// The guards every command that simulates runs before it allocates: the memory estimate (--max-memory) and the work
// estimate (--max-work) of sim/study (resource_estimate.hpp, work_estimate.hpp) and their flags (resource_flags.hpp).

#include "gputwin/common/byte_text.hpp"
#include "gputwin/sim/resource_estimate.hpp"
#include "gputwin/sim/resource_flags.hpp"
#include "gputwin/sim/work_estimate.hpp"

namespace gputwin::cli {

using sim::add_max_memory_flag;
using sim::add_max_work_flag;
using sim::check_resources;
using sim::check_work;
using sim::default_max_work;
using sim::estimate_collective;
using sim::estimate_iteration_cases;
using sim::estimate_iteration_table;
using sim::estimate_plan_work;
using sim::estimate_platform;
using sim::estimate_programs;
using sim::estimate_search_work;
using sim::estimate_simulation;
using sim::iteration_cases_work;
using sim::max_memory_bytes;
using sim::max_work;
using sim::ResourceEstimate;
using sim::WorkEstimate;

} // namespace gputwin::cli
