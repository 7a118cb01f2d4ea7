#pragma once
// Chrome trace-event JSON of a simulated iteration (opens in Perfetto / chrome://tracing): one process per
// simulated rank (a folded program stands for its stage's t x d ranks), one thread per stream, a slice per op
// with its name, phase, layer and micro-batch.

#include "gputwin/sim/iteration_executor.hpp"

#include <ostream>
#include <string>

namespace gputwin::cli {

void write_chrome_timeline(std::ostream& out, const sim::IterationResult& result, int64_t ranks_per_program);
// The same into `path` (the `--timeline FILE` of simulate and replay), written atomically
// (traces/output_file.hpp); throws OutputError "--timeline: cannot write 'PATH': REASON".
void write_chrome_timeline_file(const std::string& path, const sim::IterationResult& result, int64_t ranks_per_program);

} // namespace gputwin::cli
