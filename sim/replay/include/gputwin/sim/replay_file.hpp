#pragma once
// `gputwin replay TRACE`: the file read, its format told from its content and name -- a gputwin trace
// (op_graph_replay.hpp), a PyTorch profiler (Kineto) trace (kineto_step_replay.hpp), or a Chakra execution trace
// (chakra_file_replay.hpp) -- and replayed as the request says. Runs SimGrid: one per process.

#include "gputwin/sim/chakra_file_replay.hpp"
#include "gputwin/sim/kineto_step_replay.hpp"
#include "gputwin/sim/op_graph_replay.hpp"
#include "gputwin/sim/replay_request.hpp"

#include <ostream>
#include <variant>

namespace gputwin::sim {

using TraceFileReplay = std::variant<OpGraphReplay, KinetoStepReplay, ChakraFileReplay>;

// Reads request.trace_path, tells its format and replays it. Throws InputError for an unreadable or bad trace,
// for flags its format does not take (--step and --comm-scale are for Kineto traces only), and as each replay does.
TraceFileReplay replay_trace_file(const ReplayRequest& request);

// The replay's result and how many ranks each simulated program stands for (for the Chrome timeline).
const IterationResult& replay_result(const TraceFileReplay& replay);
int64_t replay_ranks_per_program(const TraceFileReplay& replay);

// The replay's report in its format's JSON form, or as text.
void write_replay_json(std::ostream& out, const TraceFileReplay& replay);
void print_replay(std::ostream& out, const TraceFileReplay& replay);

} // namespace gputwin::sim
