#pragma once
// Assembles the engine's trace: the rank programs of the recorded iteration, the grid's groups, the run's
// configuration as metadata, and the measured iteration times.

#include "gputwin/engine/parallel/rank_grid.hpp"
#include "gputwin/engine/train/trainer.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <vector>

namespace gputwin::engine {

// Start times are shifted so the earliest op of the iteration starts at 0.
traces::OpGraph build_trace(const TrainConfig& config, const RankGrid& grid, std::vector<traces::RankProgram> programs,
                            const std::vector<double>& iteration_seconds);

} // namespace gputwin::engine
