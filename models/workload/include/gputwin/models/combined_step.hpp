#pragma once
// Megatron-Core's EP all-to-all overlap (--overlap-moe-expert-parallel-comm, ModelParallelConfig
// overlap_moe_expert_parallel_comm): in the 1F1B phase the forward step of one micro-batch and the backward step of
// another run as one combined step, layer by layer, so that each MoE token exchange of the one hides behind the
// other's computation (megatron/core/pipeline_parallel/combined_1f1b.py; megatron/core/models/common/
// model_chunk_schedule_plan.py). Per pair of layers -- the forward's k-th and the backward's k-th from the end --
// TransformerLayerSchedulePlan.run issues
//     comm stream:    combine bwd (b)   | dispatch fwd (f) -> dispatch bwd (b) | combine fwd (f)
//     compute stream: pre-dispatch fwd (f) | mlp bwd (b), its wgrad -> mlp fwd (f) | pre-dispatch bwd (b)
// with the forward's preprocessing (receive, embedding) and the backward's first part (output layer, receive)
// before the layers and the rest (sends, loss, embedding backward) after them. Layers without experts, and the
// layers left over when the two chunks differ in length, run alone in their place.
//
// combine_steps rewrites a program in place: two adjacent steps already emitted -- one forward, one backward, of
// different micro-batches or chunks, so independent of each other -- are reordered into that issue order, their
// token exchanges (moe.dispatch, moe.combine and their backward) move to ep_stream with explicit dependencies on
// the compute ops around them, and the ops of the range are renumbered (a program's op ids are its indices).

#include "gputwin/traces/op_graph.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gputwin {

// Ops of one emitted step: the index range [begin, end) of the program, its direction and the global layers of its
// chunk ([first_layer, first_layer + layers)).
struct EmittedStep {
  size_t begin = 0, end = 0;
  bool forward = true;
  int64_t first_layer = 0, layers = 0;
};

// Reorders ops[first.begin, second.end) (first.end == second.begin; one forward and one backward step) into the
// combined step (header). With `delay_wgrad` (Megatron-Core --delay-wgrad-compute: the backward's weight gradients
// run after the layer's exchanges are issued, backward_dw) the backward's exchanges wait for its last data-gradient
// op, not for the weight gradients after it. Returns the new id of each old id of the range, indexed by old id -
// first.begin. REQUIRES: ops[i].id == i for the range.
std::vector<int64_t> combine_steps(std::vector<traces::Op>& ops, const EmittedStep& first, const EmittedStep& second,
                                   bool delay_wgrad = false);

} // namespace gputwin
