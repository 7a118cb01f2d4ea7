// The folded workload written out for every rank (workload_unfolding.hpp).
#include "gputwin/models/workload_unfolding.hpp"

#include "gputwin/models/plan_metadata.hpp"
#include "gputwin/models/rank_layout.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

namespace gputwin {

namespace {

// The communicator of `coord` that plays the part `members` plays for the representative rank: every coordinate
// the members share (the group's fixed axes) is replaced by coord's, the axes they span are kept. Every
// communicator of a workload is such a box through its representative (a TP group spans tp, a DP group dp and
// cp, a CP ring cp, the embedding group the first and last stage).
std::vector<int32_t> counterpart(const ParallelPlan& plan, const std::vector<int32_t>& members, const RankCoord& coord)
{
  std::vector<RankCoord> coords;
  coords.reserve(members.size());
  for (const int32_t m : members)
    coords.push_back(rank_coord(plan, m));
  const auto spans = [&](int64_t RankCoord::*axis) {
    return std::any_of(coords.begin(), coords.end(), [&](const RankCoord& c) { return c.*axis != coords[0].*axis; });
  };
  const bool tp = spans(&RankCoord::tp), cp = spans(&RankCoord::cp), dp = spans(&RankCoord::dp),
             stage = spans(&RankCoord::stage);
  std::vector<int32_t> out;
  out.reserve(coords.size());
  for (RankCoord c : coords) {
    if (!tp)
      c.tp = coord.tp;
    if (!cp)
      c.cp = coord.cp;
    if (!dp)
      c.dp = coord.dp;
    if (!stage)
      c.stage = coord.stage;
    out.push_back(static_cast<int32_t>(global_rank(plan, c)));
  }
  return out;
}

} // namespace

traces::OpGraph unfolded_workload_graph(const Workload& workload)
{
  const ParallelPlan& plan = workload.plan;
  traces::OpGraph graph;
  graph.metadata = {{"generator", "gputwin workload"}, {"folded", "false"}};
  write_plan_metadata(workload.model, plan, graph.metadata);

  // (kind, members) -> index in graph.groups. The kind is part of the key: two communicators of one member set
  // (the CP ring and the dp x cp group when dp is 1) are separate process groups, each with its own sequence of
  // collectives; merged, their sequence numbers would collide.
  std::map<std::pair<std::string, std::vector<int32_t>>, int32_t> group_index;
  const auto group_of = [&](int32_t folded_group, const RankCoord& coord) {
    const traces::CommGroup& g = workload.groups.at(static_cast<size_t>(folded_group));
    std::vector<int32_t> members = counterpart(plan, g.ranks, coord);
    const auto [it, inserted] =
        group_index.emplace(std::make_pair(g.kind, members), static_cast<int32_t>(graph.groups.size()));
    if (inserted)
      graph.groups.push_back({g.kind, std::move(members)});
    return it->second;
  };

  graph.ranks.resize(static_cast<size_t>(plan.gpus()));
  for (int64_t stage = 0; stage < plan.pp; ++stage) {
    const traces::RankProgram folded = stage_program(workload, stage);
    for (int64_t rank = 0; rank < plan.gpus(); ++rank) {
      const RankCoord coord = rank_coord(plan, rank);
      if (coord.stage != stage)
        continue;
      traces::RankProgram program = folded;
      program.rank = static_cast<int32_t>(rank);
      for (traces::Op& op : program.ops) {
        if (op.kind == traces::OpKind::Collective) {
          op.group = group_of(op.group, coord);
        } else if (op.kind == traces::OpKind::Send || op.kind == traces::OpKind::Recv) {
          RankCoord peer = coord; // the same tp, cp and dp index on the peer's stage
          peer.stage = rank_coord(plan, op.peer).stage;
          op.peer = static_cast<int32_t>(global_rank(plan, peer));
        }
      }
      graph.ranks[static_cast<size_t>(rank)] = std::move(program);
    }
  }
  return graph;
}

} // namespace gputwin
