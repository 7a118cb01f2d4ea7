#pragma once
// The folded workload written out for every rank. The generator folds: one program per pipeline stage, that of
// its representative rank (tp 0, cp 0, dp 0), stands for the stage's tp x cp x dp ranks, which do the same work
// at the same times (workload.hpp). Tools that run every rank themselves (ASTRA-sim through `simulate
// --chakra`) need each rank's own program: the same ops in the same order, with the rank's own communicators
// and pipeline peers. This is that graph; the simulator itself never needs it.

#include "gputwin/models/workload.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstdint>

namespace gputwin {

// Every rank of the plan, rank r at ranks[r]: its stage's program with rank r's communicators (groups renumbered
// in order of first use; each group once, with every member) and its pipeline peers (the same tp, cp and dp
// index on the neighbouring stage). Metadata as workload_graph(), with "folded" = "false".
traces::OpGraph unfolded_workload_graph(const Workload& workload);

} // namespace gputwin
