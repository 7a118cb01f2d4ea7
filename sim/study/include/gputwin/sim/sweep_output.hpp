#pragma once
// `gputwin sweep`'s report: one row per point with its best plan, time to train, GPU-hours, cost and scaling
// efficiency, as a table or JSON (the CSV is sweep_csv.hpp's, the plot sweep_plot.hpp's).

#include "gputwin/sim/sweep_csv.hpp"

#include <ostream>
#include <vector>

namespace gputwin::sim {

// The rows as a table: time to train in days, cost in the price's unit, "-" for the scaling efficiency of a slice.
void print_sweep_table(std::ostream& out, const std::vector<SweepRow>& rows);

// The rows as a JSON list, in point order, and a line break (times in seconds, memory in bytes).
void write_sweep_json(std::ostream& out, const std::vector<SweepRow>& rows);

} // namespace gputwin::sim
