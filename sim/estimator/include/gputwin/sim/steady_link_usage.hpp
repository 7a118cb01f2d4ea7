#pragma once
// The link usage (link_usage.hpp) of a steady-state sample (steady_state.hpp) and what one period adds to it, so
// that a run whose link report is wanted (the busiest link kind of an MoE run) can still take the shortcut.
//
// The sample's flows carry the (program, op) that ran them, so each is a flow of a micro-batch
// (period_micro_batches). Those of the repeating micro-batches [first, micro_batches - warmup) repeat a period T
// later; the others (warm-up, cool-down, the data-parallel tail) do not. Where the repeating flows alone fill a
// time window [x, x + 2T) -- x after the last non-repeating flow of the start has ended (in the widest gap between
// flow starts of the next period), x + 2T before the first one of the end starts -- an iteration with k more
// periods is the sample with k copies of [x, x + T) inserted at x + T: every link's bytes, flows (counted where
// they start) and busy time (the union of its transfers clipped to the window) grow by their value in [x, x + T)
// per period. Taken only where [x, x + T) and [x + T, x + 2T) give the same usage, link by link (counts exactly,
// bytes to 1e-9 relative, busy times to 1e-8 of the run more: the executor's 1e-9 s steps), as the period's
// figures must (steady_state.cpp); else nullopt, and the sample is lengthened or the iteration executed whole.
// Plain C++.

#include "gputwin/sim/link_usage.hpp"
#include "gputwin/sim/steady_state.hpp"

#include <optional>
#include <vector>

namespace gputwin::sim {

// What one period adds to the link usage of the sample run `log` (its flows; `programs`, its programs with their
// ops), or nullopt where no window of two periods holds only repeating flows or the two periods differ.
std::optional<LinkUsage> period_link_usage(const topo::ClusterGraph& graph, const FlowLog& log,
                                           const std::vector<traces::RankProgram>& programs,
                                           const SteadyStateSample& sample, const SteadyPeriod& period);

} // namespace gputwin::sim
