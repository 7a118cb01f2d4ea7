#pragma once
// Where each rank of a parallel plan sits: Megatron-LM's order, tensor-parallel innermost, then context, then
// data, then pipeline (rank = tp + t (cp + c (dp + d stage))), so a TP group is contiguous (inside one node
// when t <= GPUs per node), a context-parallel ring is t ranks apart, and the stages of a pipeline are t c d
// ranks apart.

#include "gputwin/models/parallel_plan.hpp"

#include <cstdint>
#include <vector>

namespace gputwin {

struct RankCoord {
  int64_t stage = 0;
  int64_t dp = 0;
  int64_t tp = 0;
  int64_t cp = 0;
  bool operator==(const RankCoord&) const = default;
};

int64_t global_rank(const ParallelPlan& plan, const RankCoord& c);
RankCoord rank_coord(const ParallelPlan& plan, int64_t rank);

// The ranks of each communicator a rank belongs to, in communicator order.
std::vector<int32_t> tp_group_ranks(const ParallelPlan& plan, int64_t stage, int64_t dp, int64_t cp = 0);
// The data-parallel gradient group of a stage's TP rank: every (dp, cp) slot, as Megatron-Core's
// data-parallel-with-context-parallel group (gradients are reduced over the cp ranks too).
std::vector<int32_t> dp_group_ranks(const ParallelPlan& plan, int64_t stage, int64_t tp);
// The context-parallel ring of a (stage, dp, tp) slot.
std::vector<int32_t> cp_group_ranks(const ParallelPlan& plan, int64_t stage, int64_t dp, int64_t tp);

// Expert grid (mixture of experts; Megatron-Core's expert RankGenerator, order tp-ep-dp-pp with tp = etp): the
// tp x cp x dp ranks of a stage, in the order above, are etp x ep x edp with etp innermost:
// rank = stage offset + etp_index + etp (ep_index + ep edp_index). REQUIRES: ep x etp divides tp x cp x dp.
struct ExpertCoord {
  int64_t stage = 0;
  int64_t etp = 0;
  int64_t ep = 0;
  int64_t edp = 0;
  bool operator==(const ExpertCoord&) const = default;
};
int64_t expert_global_rank(const ParallelPlan& plan, const ExpertCoord& c);
ExpertCoord expert_coord(const ParallelPlan& plan, int64_t rank);
// The expert-parallel group (all-to-all of tokens) through (stage, etp index, edp index), in EP order.
std::vector<int32_t> ep_group_ranks(const ParallelPlan& plan, int64_t stage, int64_t etp, int64_t edp);
// The expert tensor-parallel group (an expert's MLP split over etp ranks) through (stage, ep index, edp index).
std::vector<int32_t> etp_group_ranks(const ParallelPlan& plan, int64_t stage, int64_t ep, int64_t edp);
// The expert data-parallel group (the replicas of the same experts, which reduce their gradients).
std::vector<int32_t> edp_group_ranks(const ParallelPlan& plan, int64_t stage, int64_t etp, int64_t ep);

} // namespace gputwin
