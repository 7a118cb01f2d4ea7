#pragma once
// `gputwin search`'s report: the confirmed plans ranked by simulated time, as CSV (--csv), JSON (--json) or a table.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/sim/simulated_search.hpp"

#include <cstddef>
#include <ostream>
#include <vector>

namespace gputwin::sim {

// The ranked plans as CSV: a header, then one line per plan from rank 1 (times in seconds, memory in bytes).
void write_search_csv(std::ostream& out, const std::vector<SimulatedCandidate>& ranked);

// The ranked plans as a JSON list, best first, and a line break.
void write_search_json(std::ostream& out, const std::vector<SimulatedCandidate>& ranked);

// The search's summary (the job, how many plans were valid, fit, were estimated and ruled out: `ruled_out` by a lower
// bound) and the ranked plans as a table.
void print_search_table(std::ostream& out, const GptConfig& model, const SearchRequest& request,
                        const std::vector<SimulatedCandidate>& ranked, size_t ruled_out);

} // namespace gputwin::sim
