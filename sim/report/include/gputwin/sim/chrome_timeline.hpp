#pragma once
// Chrome trace-event JSON of a simulated iteration (opens in Perfetto / chrome://tracing): one process per
// simulated rank (a folded program stands for its stage's t x d ranks), one thread per stream, a slice per op
// with its name, phase, layer and micro-batch; optionally counter tracks (simulate: the busiest links' utilisation).

#include "gputwin/sim/iteration_result.hpp"

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace gputwin::sim {

// A counter shown as its own track: (time in s, value from then on) steps.
struct CounterTrack {
  std::string name;
  std::vector<std::pair<double, double>> steps;
};

// `counters` go into one more process, "link utilisation", a counter track each.
void write_chrome_timeline(std::ostream& out, const sim::IterationResult& result, int64_t ranks_per_program,
                           const std::vector<CounterTrack>& counters = {});
// The same into `path` (the `--timeline FILE` of simulate and replay), written atomically
// (common/output_file.hpp); throws OutputError "--timeline: cannot write 'PATH': REASON".
void write_chrome_timeline_file(const std::string& path, const sim::IterationResult& result, int64_t ranks_per_program,
                                const std::vector<CounterTrack>& counters = {});

} // namespace gputwin::sim
