#pragma once
// The rank grid of a run: dp x pp x tp ranks placed by the models' rank layout (models/rank_layout.hpp:
// Megatron-LM's order, tensor parallelism innermost, then data, then pipeline), so the engine's world ranks
// are the simulator's; and the communicator groups it needs, in a fixed order that is also the trace's group
// list.

#include "gputwin/models/parallel_plan.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstdint>
#include <vector>

namespace gputwin::engine {

struct RankCoords {
  int64_t dp = 0, pp = 0, tp = 0;
};

// The expert grid of a mixture-of-experts model (models/rank_layout.hpp: a stage's tp x dp ranks folded as
// etp x ep x edp, etp innermost); `enabled` false for a dense model.
struct ExpertGrid {
  bool enabled = false;
  int64_t ep = 1, etp = 1;
};

class RankGrid {
public:
  RankGrid(int64_t dp, int64_t pp, int64_t tp, ExpertGrid expert = {});

  int64_t dp() const { return dp_; }
  int64_t pp() const { return pp_; }
  int64_t tp() const { return tp_; }
  int world_size() const { return static_cast<int>(dp_ * pp_ * tp_); }
  // world rank = tp + TP x (dp + DP x pp), as global_rank() of models/rank_layout.hpp
  int rank_of(int64_t dp, int64_t pp, int64_t tp) const;
  RankCoords coords(int rank) const;

  // Every group of the run: the tp groups (one per (dp, stage)), then the pp groups (one per (dp, tp)), then
  // the dp groups (one per (stage, tp)), then, with pp > 1, the embedding groups (first and last stage of
  // one (dp, tp): they all-reduce the tied word embedding's gradient), then with experts the ep groups (one per
  // (stage, etp, edp)) and the edp groups (one per (stage, etp, ep)).
  const std::vector<traces::CommGroup>& groups() const { return groups_; }
  int tp_group(int rank) const;
  int pp_group(int rank) const;
  int dp_group(int rank) const;
  int embedding_group(int rank) const; // -1 for ranks outside the first and last stage or with pp == 1
  int ep_group(int rank) const;        // -1 without experts
  int edp_group(int rank) const;       // -1 without experts
  const ExpertGrid& expert() const { return expert_; }
  // The world ranks of group `index` in group order, as communicators take them; and every world rank, 0..n-1.
  std::vector<int> members(int index) const;
  std::vector<int> all_ranks() const;

private:
  ParallelPlan layout_plan() const;

  int64_t dp_, pp_, tp_;
  ExpertGrid expert_;
  int first_expert_group_ = -1;
  std::vector<traces::CommGroup> groups_;
};

} // namespace gputwin::engine
