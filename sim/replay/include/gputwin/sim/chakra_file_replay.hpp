#pragma once
// `gputwin replay` of a Chakra execution trace -- a PyTorch host ET (JSON) or Chakra protobuf ET files
// (traces/chakra/README.md, "Import") -- on a cluster with every collective as flows: what was read, how each op
// was timed, what was ignored, and the report as JSON and text. Runs SimGrid: one per process.

#include "gputwin/chakra/chakra_reader.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/sim/iteration_result.hpp"
#include "gputwin/sim/replay_request.hpp"

#include <ostream>
#include <string>

namespace gputwin::sim {

struct ChakraFileReplay {
  std::string trace_path;
  chakra::ChakraTrace trace;
  topo::ClusterSpec cluster; // sized to the trace's world unless --nodes fixed it
  GpuComputeModel gpu;       // what compute ops without a recorded duration are timed on
  bool retargeted = false;   // --gpu or --gpu-model: recorded durations ignored
  double ops = 0;            // ops of every simulated rank
  IterationResult result;
  double wall_s = 0; // the replay's wall-clock time
};

// Replays the Chakra trace at request.trace_path (`text`: its content, already read). Throws InputError for flags
// that do not apply (a scale-out, --step, --comm-scale, --compute-scale), a bad trace, a world larger than the
// cluster of --nodes, and when a guard refuses.
ChakraFileReplay replay_chakra_file(const ReplayRequest& request, const std::string& text);

// The JSON report: the trace, what was read and how each op was timed, what was ignored, the iteration time.
void write_chakra_file_replay_json(std::ostream& out, const ChakraFileReplay& replay);

// The text report: the trace, what was read and how each op was timed, each reason nodes were ignored (with a few
// of their names), the cluster and compute model, the iteration time.
void print_chakra_file_replay(std::ostream& out, const ChakraFileReplay& replay);

} // namespace gputwin::sim
