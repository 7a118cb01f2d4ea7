#pragma once
// The Megatron-Core communication overlaps as command-line switches (--overlap-grad-reduce,
// --overlap-param-gather, --tp-comm-overlap), declared and read once for every command that builds workloads
// from flags (`simulate`, `calibrate --iterations`, `compare --iterations`).

#include "gputwin/common/arg_parser.hpp"
#include "gputwin/models/parallel_plan.hpp"
#include "gputwin/models/workload.hpp"

namespace gputwin::cli {

// Declares the three overlap switches on `parser`.
void add_overlap_flags(ArgParser& parser);

// The overlaps the switches of `args` turn on, for `plan`. Throws InputError naming --tp-comm-overlap when the plan
// has no sequence parallelism, and --overlap-param-gather when it has no ZeRO-1.
WorkloadOptions overlap_options_from_flags(const ParsedArgs& args, const ParallelPlan& plan);

} // namespace gputwin::cli
