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

int64_t expert_global_rank(const ParallelPlan& plan, const ExpertCoord& c)
{
  return c.etp + plan.expert_tp() * (c.ep + plan.ep * c.edp) + plan.tp * plan.cp * plan.dp * c.stage;
}

ExpertCoord expert_coord(const ParallelPlan& plan, int64_t rank)
{
  const int64_t block = plan.tp * plan.cp * plan.dp;
  const int64_t local = rank % block;
  ExpertCoord c;
  c.stage = rank / block;
  c.etp = local % plan.expert_tp();
  c.ep = (local / plan.expert_tp()) % plan.ep;
  c.edp = local / (plan.expert_tp() * plan.ep);
  return c;
}

std::vector<int32_t> ep_group_ranks(const ParallelPlan& plan, int64_t stage, int64_t etp, int64_t edp)
{
  std::vector<int32_t> ranks;
  for (int64_t e = 0; e < plan.ep; ++e)
    ranks.push_back(static_cast<int32_t>(expert_global_rank(plan, {stage, etp, e, edp})));
  return ranks;
}

std::vector<int32_t> etp_group_ranks(const ParallelPlan& plan, int64_t stage, int64_t ep, int64_t edp)
{
  std::vector<int32_t> ranks;
  for (int64_t t = 0; t < plan.expert_tp(); ++t)
    ranks.push_back(static_cast<int32_t>(expert_global_rank(plan, {stage, t, ep, edp})));
  return ranks;
}

std::vector<int32_t> edp_group_ranks(const ParallelPlan& plan, int64_t stage, int64_t etp, int64_t ep)
{
  std::vector<int32_t> ranks;
  for (int64_t d = 0; d < plan.expert_dp(); ++d)
    ranks.push_back(static_cast<int32_t>(expert_global_rank(plan, {stage, etp, ep, d})));
  return ranks;
}

} // namespace gputwin
