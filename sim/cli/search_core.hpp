#pragma once
// What `search` and `goodput --search` read from their flags: the job and the plans a search considers. The search
// itself (the plans ranked, the best confirmed by the full simulation) is sim/study's simulated_search.hpp.

#include "gputwin/common/arg_parser.hpp"
#include "gputwin/common/json_writer.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/sim/simulated_search.hpp"

#include <cstdint>
#include <string>

namespace gputwin::cli {

using sim::rank_and_simulate;
using sim::SearchRequest;
using sim::SimulatedCandidate;

// Reads --gpus (required: `gpus_required` ends its error), --global-batch (default: the GPUs), --top (default
// `default_top`), --jobs, --attention, --cp (default: sim::default_context_parallel), --fp8 / --precision,
// --no-overlaps, --micro-batches (where the command has it), the cluster and GPU-model flags and --max-work, and
// enumerates the plans of `model` (sim::enumerate_search_plans). InputError naming the flag for a bad value, GPUs
// that are not whole nodes, no plan that splits over the GPUs, or none that fits (with the smallest plan's memory
// against the GPU's).
SearchRequest read_search_request(const ParsedArgs& parsed, const GptConfig& model, int64_t default_top,
                                  const std::string& gpus_required);

} // namespace gputwin::cli
