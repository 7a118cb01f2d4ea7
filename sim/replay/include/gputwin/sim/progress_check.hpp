#pragma once
// Whether an op graph can run to the end: every op's dependencies, its stream's earlier ops, its
// collective's other members and its message's sender can all be satisfied in some order. A graph that
// cannot (two ranks entering the same communicator's collectives in different orders, a receive whose send
// waits for it, ...) would deadlock the simulation; it is rejected before, naming a stuck op. Plain C++.

#include "gputwin/traces/op_graph.hpp"

namespace gputwin::sim {

// Throws traces::TraceError "trace cannot complete: rank R op ID 'NAME' (stream S) waits for ..." naming the
// first stuck op. REQUIRES: traces::validate_op_graph(graph) passed.
void check_progress(const traces::OpGraph& graph);

} // namespace gputwin::sim
