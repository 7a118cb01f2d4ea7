#pragma once
// Converts an op graph with measured timings into the Chrome trace-event JSON that Perfetto
// (ui.perfetto.dev) and chrome://tracing open: one process per rank, one thread per stream, one complete
// ("X") event per measured op with its kind, phase, layer, micro-batch, FLOPs, bytes and communication
// fields as arguments.

#include "gputwin/traces/op_graph.hpp"

#include <cstdint>
#include <ostream>
#include <string>

namespace gputwin::traces {

// Writes the trace events; returns how many ops had no measured start/duration and were left out.
int64_t write_perfetto_trace(std::ostream& out, const OpGraph& graph);
// The same into `path`, atomically (output_file.hpp); throws OutputError naming the path if it cannot be written.
int64_t write_perfetto_trace_file(const std::string& path, const OpGraph& graph);

} // namespace gputwin::traces
