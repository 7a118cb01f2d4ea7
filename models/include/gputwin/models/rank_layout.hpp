#pragma once
// Where each rank of a parallel plan sits: Megatron-LM's order, tensor-parallel innermost, then data, then
// pipeline (rank = tp + t (dp + d stage)), so a TP group is contiguous (inside one node when t <= GPUs per
// node) and the stages of a pipeline are t*d ranks apart.

#include "gputwin/models/parallel_plan.hpp"

#include <cstdint>
#include <vector>

namespace gputwin {

struct RankCoord {
  int64_t stage = 0;
  int64_t dp = 0;
  int64_t tp = 0;
  bool operator==(const RankCoord&) const = default;
};

int64_t global_rank(const ParallelPlan& plan, const RankCoord& c);
RankCoord rank_coord(const ParallelPlan& plan, int64_t rank);

// The ranks of each communicator a rank belongs to, in communicator order.
std::vector<int32_t> tp_group_ranks(const ParallelPlan& plan, int64_t stage, int64_t dp);
std::vector<int32_t> dp_group_ranks(const ParallelPlan& plan, int64_t stage, int64_t tp);

} // namespace gputwin
