#include "gputwin/models/rank_layout.hpp"

namespace gputwin {

int64_t global_rank(const ParallelPlan& plan, const RankCoord& c)
{
  return c.tp + plan.tp * (c.cp + plan.cp * (c.dp + plan.dp * c.stage));
}

RankCoord rank_coord(const ParallelPlan& plan, int64_t rank)
{
  RankCoord c;
  c.tp = rank % plan.tp;
  c.cp = (rank / plan.tp) % plan.cp;
  c.dp = (rank / (plan.tp * plan.cp)) % plan.dp;
  c.stage = rank / (plan.tp * plan.cp * plan.dp);
  return c;
}

std::vector<int32_t> tp_group_ranks(const ParallelPlan& plan, int64_t stage, int64_t dp, int64_t cp)
{
  std::vector<int32_t> ranks;
  for (int64_t t = 0; t < plan.tp; ++t)
    ranks.push_back(static_cast<int32_t>(global_rank(plan, {stage, dp, t, cp})));
  return ranks;
}

std::vector<int32_t> dp_group_ranks(const ParallelPlan& plan, int64_t stage, int64_t tp)
{
  std::vector<int32_t> ranks;
  for (int64_t d = 0; d < plan.dp; ++d)
    for (int64_t c = 0; c < plan.cp; ++c)
      ranks.push_back(static_cast<int32_t>(global_rank(plan, {stage, d, tp, c})));
  return ranks;
}

std::vector<int32_t> cp_group_ranks(const ParallelPlan& plan, int64_t stage, int64_t dp, int64_t tp)
{
  std::vector<int32_t> ranks;
  for (int64_t c = 0; c < plan.cp; ++c)
    ranks.push_back(static_cast<int32_t>(global_rank(plan, {stage, dp, tp, c})));
  return ranks;
}

} // namespace gputwin
