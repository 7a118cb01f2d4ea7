#pragma once
// Reading and writing op graphs as trace files (traces/FORMAT.md, format version 1).
//
// The writer is deterministic: the same graph always gives the same bytes, and write -> read -> write
// reproduces the file byte for byte. The reader validates everything the simulator relies on (see
// validate_op_graph) and reports the first problem in one line naming the file, the op (rank and id) and
// the field, and what was expected.

#include "gputwin/common/input_error.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gputwin::traces {

// A trace that cannot be read or does not validate: bad input like any other (InputError). what() is one line.
class TraceError : public InputError {
public:
  explicit TraceError(const std::string& message) : InputError(message) {}
};

// The value of the top-level "format" member of every trace file.
inline constexpr const char* op_graph_format_name = "gputwin-op-graph";

// Writes `graph` in the trace format: one line per op. REQUIRES: finite flops, bytes and iteration times.
void write_op_graph(std::ostream& out, const OpGraph& graph);
std::string op_graph_to_json(const OpGraph& graph);
// Writes to `path` atomically (output_file.hpp); throws OutputError naming the path if it cannot be written.
void write_op_graph_file(const std::string& path, const OpGraph& graph);

// Parses and validates a trace. `source` names the input in error messages ("run.trace.json").
// Throws TraceError "SOURCE:LINE:COLUMN: ..." on malformed JSON and "SOURCE: rank R op ID: field 'F': ..."
// on content that does not follow the format.
OpGraph parse_op_graph(std::string_view json_text, const std::string& source);
// Reads `path` and parses it; throws TraceError if the file cannot be read.
OpGraph read_op_graph_file(const std::string& path);

// Checks the cross-op rules of the format: at least one rank, every rank has at least one op; ids increase within a rank; deps name earlier ops of the same
// rank; group indices are in range and the rank belongs to its group; a collective with the same group and
// sequence exists on every member with the same collective and bytes; every send has the receive with the
// same (source, destination, sequence) and bytes, and vice versa. Throws TraceError (without a file name).
void validate_op_graph(const OpGraph& graph);

} // namespace gputwin::traces
