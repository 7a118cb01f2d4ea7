#pragma once
// Replaying a Chakra trace (traces/chakra/README.md, "Import"): the checks an imported op graph must pass and
// how its compute ops are timed. An import holds the programs of the ranks its files describe, while its groups
// list their full membership (a PyTorch host ET describes one rank of a world of many; a folded
// `simulate --chakra` export one rank per pipeline stage): members without a program are not simulated, and
// their side of a collective arrives with the simulated members' (as in a folded workload). Plain C++.

#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstddef>
#include <functional>

namespace gputwin::sim {

// Validates `graph` over the ranks that have a program (traces::validate_op_graph on a copy whose groups keep
// only those ranks) and checks that it can run to the end (check_progress). Throws traces::TraceError.
void check_chakra_graph(const traces::OpGraph& graph);

// Durations of the non-communication ops: the recorded duration when the op has one (duration_ns >= 0) and
// `use_recorded`, else the GPU compute model's time for its FLOPs and bytes -- for FLOPs without a GEMM shape
// (a .et COMP_NODE's num_ops) at least FLOPs / (peak x the model's GEMM efficiency). A sim::ComputeDuration.
std::function<double(size_t, const traces::Op&)> chakra_compute_duration(const GpuComputeModel& gpu, bool use_recorded);

} // namespace gputwin::sim
