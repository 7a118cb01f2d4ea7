#pragma once
// The traffic matrix of a MoE layer's token all-to-alls (moe.dispatch, moe.combine and their backward) under load
// imbalance: every rank routes from the same expert popularity (expert_load.hpp), so rank i sends rank j
// bytes / n x load_j in a dispatch (the receiver's experts draw the tokens) and bytes / n x load_i in a combine (the
// transpose). The simulator's flows (sim/collectives) and the Chakra export's per-pair messages both take their
// weights from here and their pair bytes from traces' all_to_all_pair_bytes.

#include "gputwin/models/expert_load.hpp"
#include "gputwin/traces/collective_op.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <optional>

namespace gputwin {

// True for moe.combine and moe.dispatch.bwd: the tokens' way back to their ranks (the sender's load weighs a pair;
// DeepEP's relay sits on the receiver's rail).
bool returns_tokens(const traces::Op& op);

// The weights of `op` when it is a token all-to-all of a MoE layer whose EP ranks are not all at load 1: the
// layer's EP-rank loads, at the sender for moe.combine and moe.dispatch.bwd (the tokens' way back), at the receiver
// for moe.dispatch and moe.combine.bwd. nullopt for any other op and for a balanced layer (an even all-to-all).
std::optional<AllToAllWeights> token_exchange_weights(const ExpertLoads& loads, const traces::Op& op);

} // namespace gputwin
