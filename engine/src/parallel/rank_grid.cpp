#include "gputwin/engine/parallel/rank_grid.hpp"

#include "gputwin/models/rank_layout.hpp"

#include <stdexcept>

namespace gputwin::engine {

RankGrid::RankGrid(int64_t dp, int64_t pp, int64_t tp, ExpertGrid expert) : dp_(dp), pp_(pp), tp_(tp), expert_(expert)
{
  if (dp < 1 || pp < 1 || tp < 1)
    throw std::invalid_argument("RankGrid: dp, pp and tp must be >= 1");
  for (int64_t d = 0; d < dp; ++d)
    for (int64_t p = 0; p < pp; ++p) {
      traces::CommGroup g{"tp", {}};
      for (int64_t t = 0; t < tp; ++t)
        g.ranks.push_back(rank_of(d, p, t));
      groups_.push_back(g);
    }
  for (int64_t d = 0; d < dp; ++d)
    for (int64_t t = 0; t < tp; ++t) {
      traces::CommGroup g{"pp", {}};
      for (int64_t p = 0; p < pp; ++p)
        g.ranks.push_back(rank_of(d, p, t));
      groups_.push_back(g);
    }
  for (int64_t p = 0; p < pp; ++p)
    for (int64_t t = 0; t < tp; ++t) {
      traces::CommGroup g{"dp", {}};
      for (int64_t d = 0; d < dp; ++d)
        g.ranks.push_back(rank_of(d, p, t));
      groups_.push_back(g);
    }
  if (pp > 1)
    for (int64_t d = 0; d < dp; ++d)
      for (int64_t t = 0; t < tp; ++t)
        groups_.push_back(traces::CommGroup{"embedding", {rank_of(d, 0, t), rank_of(d, pp - 1, t)}});
  if (!expert_.enabled)
    return;
  if (expert_.ep < 1 || expert_.etp < 1 || (tp * dp) % (expert_.ep * expert_.etp) != 0)
    throw std::invalid_argument("RankGrid: ep x etp must divide tp x dp");
  first_expert_group_ = static_cast<int>(groups_.size());
  const ParallelPlan plan = layout_plan();
  const int64_t edp = plan.expert_dp();
  for (int64_t p = 0; p < pp; ++p)
    for (int64_t e = 0; e < edp; ++e)
      for (int64_t t = 0; t < expert_.etp; ++t)
        groups_.push_back(traces::CommGroup{"ep", ep_group_ranks(plan, p, t, e)});
  for (int64_t p = 0; p < pp; ++p)
    for (int64_t e = 0; e < expert_.ep; ++e)
      for (int64_t t = 0; t < expert_.etp; ++t)
        groups_.push_back(traces::CommGroup{"edp", edp_group_ranks(plan, p, t, e)});
}

// The models' layout (models/rank_layout.hpp) is the only one: the engine's ranks are the simulator's ranks.
int RankGrid::rank_of(int64_t dp, int64_t pp, int64_t tp) const
{
  return static_cast<int>(global_rank(layout_plan(), RankCoord{pp, dp, tp}));
}

RankCoords RankGrid::coords(int rank) const
{
  const RankCoord c = rank_coord(layout_plan(), rank);
  return RankCoords{c.dp, c.stage, c.tp};
}

ParallelPlan RankGrid::layout_plan() const
{
  ParallelPlan plan;
  plan.tp = tp_;
  plan.pp = pp_;
  plan.dp = dp_;
  plan.ep = expert_.ep;
  plan.etp = expert_.etp;
  return plan;
}

int RankGrid::ep_group(int rank) const
{
  if (!expert_.enabled)
    return -1;
  const ExpertCoord c = expert_coord(layout_plan(), rank);
  return first_expert_group_ + static_cast<int>((c.stage * layout_plan().expert_dp() + c.edp) * expert_.etp + c.etp);
}

int RankGrid::edp_group(int rank) const
{
  if (!expert_.enabled)
    return -1;
  const ExpertCoord c = expert_coord(layout_plan(), rank);
  const int first_edp = first_expert_group_ + static_cast<int>(pp_ * layout_plan().expert_dp() * expert_.etp);
  return first_edp + static_cast<int>((c.stage * expert_.ep + c.ep) * expert_.etp + c.etp);
}

int RankGrid::tp_group(int rank) const
{
  const RankCoords c = coords(rank);
  return static_cast<int>(c.dp * pp_ + c.pp);
}

int RankGrid::pp_group(int rank) const
{
  const RankCoords c = coords(rank);
  return static_cast<int>(dp_ * pp_ + c.dp * tp_ + c.tp);
}

int RankGrid::dp_group(int rank) const
{
  const RankCoords c = coords(rank);
  return static_cast<int>(dp_ * pp_ + dp_ * tp_ + c.pp * tp_ + c.tp);
}

int RankGrid::embedding_group(int rank) const
{
  const RankCoords c = coords(rank);
  if (pp_ == 1 || (c.pp != 0 && c.pp != pp_ - 1))
    return -1;
  return static_cast<int>(dp_ * pp_ + dp_ * tp_ + pp_ * tp_ + c.dp * tp_ + c.tp);
}

std::vector<int> RankGrid::members(int index) const
{
  const std::vector<int32_t>& ranks = groups_.at(static_cast<size_t>(index)).ranks;
  return std::vector<int>(ranks.begin(), ranks.end());
}

std::vector<int> RankGrid::all_ranks() const
{
  std::vector<int> ranks(static_cast<size_t>(world_size()));
  for (int r = 0; r < world_size(); ++r)
    ranks[static_cast<size_t>(r)] = r;
  return ranks;
}

} // namespace gputwin::engine
