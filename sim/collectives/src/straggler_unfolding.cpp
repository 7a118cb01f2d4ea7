#include "gputwin/sim/straggler_unfolding.hpp"

#include "gputwin/models/rank_layout.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace gputwin::sim {

namespace {

// Indices 0 .. n - 1 grouped by equal signature, classes in order of their first index.
template <class Signature>
std::vector<std::vector<int64_t>> classes_by_signature(const std::vector<Signature>& signature)
{
  std::map<Signature, size_t> class_of;
  std::vector<std::vector<int64_t>> classes;
  for (size_t i = 0; i < signature.size(); ++i) {
    const auto [it, inserted] = class_of.emplace(signature[i], classes.size());
    if (inserted)
      classes.emplace_back();
    classes[it->second].push_back(static_cast<int64_t>(i));
  }
  return classes;
}

std::vector<size_t> class_index(const std::vector<std::vector<int64_t>>& classes, int64_t n)
{
  std::vector<size_t> of(static_cast<size_t>(n), 0);
  for (size_t c = 0; c < classes.size(); ++c)
    for (const int64_t i : classes[c])
      of[static_cast<size_t>(i)] = c;
  return of;
}

} // namespace

StragglerClasses straggler_classes(const ParallelPlan& plan, const RankSpeeds& speeds)
{
  // A replica's signature: its slow ranks as (stage, tp index, speed); a tp index's: (stage, replica, speed).
  using Signature = std::vector<std::tuple<int64_t, int64_t, double>>;
  std::vector<Signature> replica(static_cast<size_t>(plan.dp)), tp_index(static_cast<size_t>(plan.tp));
  for (const auto& [rank, speed] : speeds) { // ascending ranks: signatures come out sorted
    const RankCoord c = rank_coord(plan, rank);
    replica[static_cast<size_t>(c.dp)].emplace_back(c.stage, c.tp, speed);
    tp_index[static_cast<size_t>(c.tp)].emplace_back(c.stage, c.dp, speed);
  }
  return {classes_by_signature(replica), classes_by_signature(tp_index)};
}

StragglerUnfolding::StragglerUnfolding(const topo::ClusterGraph& graph, const Workload& workload,
                                       const RankSpeeds& speeds)
    : cluster_(graph.spec()), graph_(graph), workload_(workload), speeds_(speeds),
      classes_(straggler_classes(workload.plan, speeds))
{
  const ParallelPlan& plan = workload.plan;
  replica_class_of_ = class_index(classes_.replicas, plan.dp);
  tp_class_of_ = class_index(classes_.tp_indices, plan.tp);
  for (int64_t s = 0; s < plan.pp; ++s) {
    old_groups_[workload.tp_group(s)] = {Kind::Tp, s};
    old_groups_[workload.dp_group(s)] = {Kind::Dp, s};
  }
  old_groups_[workload.embedding_group()] = {Kind::Embedding, 0};

  const auto rank = [&](int64_t s, int64_t d, int64_t t) { return static_cast<int32_t>(global_rank(plan, {s, d, t})); };
  // Class communicators: TP (stage, replica class), then DP (stage, tp class), then embedding (replica class,
  // tp class) -- the numbering new_group() computes.
  for (int64_t s = 0; s < plan.pp; ++s)
    for (const auto& replicas : classes_.replicas) {
      ClassGroup g{Kind::Tp, {}};
      for (const int64_t d : replicas)
        g.copies.push_back(tp_group_ranks(plan, s, d));
      class_groups_.push_back(std::move(g));
    }
  for (int64_t s = 0; s < plan.pp; ++s)
    for (const auto& indices : classes_.tp_indices) {
      ClassGroup g{Kind::Dp, {}};
      for (const int64_t t : indices)
        g.copies.push_back(dp_group_ranks(plan, s, t));
      class_groups_.push_back(std::move(g));
    }
  for (const auto& replicas : classes_.replicas)
    for (const auto& indices : classes_.tp_indices) {
      ClassGroup g{Kind::Embedding, {}};
      for (const int64_t d : replicas)
        for (const int64_t t : indices)
          g.copies.push_back(plan.pp > 1 ? std::vector<int32_t>{rank(0, d, t), rank(plan.pp - 1, d, t)}
                                         : std::vector<int32_t>{rank(0, d, t)});
      class_groups_.push_back(std::move(g));
    }
  static const char* const kind_names[] = {"tp", "dp", "embedding"};
  for (const ClassGroup& g : class_groups_) {
    traces::CommGroup group{kind_names[static_cast<int>(g.kind)], {}};
    for (const auto& copy : g.copies)
      group.ranks.insert(group.ranks.end(), copy.begin(), copy.end());
    groups_.push_back(std::move(group));
  }
  find_exclusive_tp_groups(graph);
}

int64_t StragglerUnfolding::stage_of(size_t program) const
{
  return static_cast<int64_t>(program / programs_per_stage());
}

int32_t StragglerUnfolding::representative(int64_t stage, size_t replica_class, size_t tp_class) const
{
  return static_cast<int32_t>(global_rank(
      workload_.plan, {stage, classes_.replicas[replica_class].front(), classes_.tp_indices[tp_class].front()}));
}

int32_t StragglerUnfolding::rank_of(size_t program) const
{
  const size_t within = program % programs_per_stage(), tp_classes = classes_.tp_indices.size();
  return representative(stage_of(program), within / tp_classes, within % tp_classes);
}

double StragglerUnfolding::speed_of(size_t program) const
{
  const auto it = speeds_.find(rank_of(program));
  return it == speeds_.end() ? 1.0 : it->second;
}

int64_t StragglerUnfolding::ranks_of(size_t program) const
{
  const size_t within = program % programs_per_stage(), tp_classes = classes_.tp_indices.size();
  return static_cast<int64_t>(classes_.replicas[within / tp_classes].size() *
                              classes_.tp_indices[within % tp_classes].size());
}

int32_t StragglerUnfolding::new_group(int32_t old_group, int64_t stage, size_t replica_class, size_t tp_class) const
{
  const auto found = old_groups_.find(old_group);
  if (found == old_groups_.end())
    throw std::logic_error("straggler unfolding: op refers to unknown group " + std::to_string(old_group));
  const auto [kind, group_stage] = found->second;
  if (kind != Kind::Embedding && group_stage != stage)
    throw std::logic_error("straggler unfolding: stage " + std::to_string(stage) + " uses group " +
                           std::to_string(old_group) + " of stage " + std::to_string(group_stage));
  const int64_t pp = workload_.plan.pp;
  const int64_t replica_classes = static_cast<int64_t>(classes_.replicas.size());
  const int64_t tp_classes = static_cast<int64_t>(classes_.tp_indices.size());
  const int64_t r = static_cast<int64_t>(replica_class), t = static_cast<int64_t>(tp_class);
  switch (kind) {
  case Kind::Tp: return static_cast<int32_t>(group_stage * replica_classes + r);
  case Kind::Dp: return static_cast<int32_t>(pp * replica_classes + group_stage * tp_classes + t);
  case Kind::Embedding: return static_cast<int32_t>(pp * (replica_classes + tp_classes) + r * tp_classes + t);
  }
  return -1;
}

std::vector<traces::RankProgram>
StragglerUnfolding::unfold(const std::vector<traces::RankProgram>& stage_programs) const
{
  const ParallelPlan& plan = workload_.plan;
  if (stage_programs.size() != static_cast<size_t>(plan.pp))
    throw std::logic_error("straggler unfolding: one program per pipeline stage expected");
  const size_t tp_classes = classes_.tp_indices.size();
  std::vector<traces::RankProgram> programs(program_count());
  for (size_t p = 0; p < programs.size(); ++p) {
    const int64_t stage = stage_of(p);
    const size_t r = (p % programs_per_stage()) / tp_classes, t = p % tp_classes;
    traces::RankProgram& program = programs[p];
    program = stage_programs[static_cast<size_t>(stage)];
    program.rank = representative(stage, r, t);
    for (traces::Op& op : program.ops) {
      if (op.kind == traces::OpKind::Collective)
        op.group = new_group(op.group, stage, r, t);
      else if (op.kind == traces::OpKind::Send || op.kind == traces::OpKind::Recv)
        op.peer = representative(rank_coord(plan, op.peer).stage, r, t);
    }
  }
  return programs;
}

bool StragglerUnfolding::within_one_domain(const std::vector<int32_t>& ranks) const
{
  for (const int32_t r : ranks)
    if (!cluster_.same_nvlink_domain(r, ranks.front()))
      return false;
  return true;
}

bool StragglerUnfolding::represented_by_first(const std::vector<int32_t>& ranks) const
{
  return within_one_domain(ranks) && std::none_of(ranks.begin(), ranks.end(), [&](int32_t r) {
           return graph_.node_faulted(graph_.node_of_gpu(r));
         });
}

// As comm_expansion: every copy that leaves its NVLink domain is on the network; copies confined to one domain are
// represented by the first unless a faulted cable is on their node.
CommWork StragglerUnfolding::copies_work(CollectiveOp op, const std::vector<std::vector<int32_t>>& copies,
                                         double bytes) const
{
  CommWork work;
  for (size_t c = 0; c < copies.size(); ++c) {
    if (c > 0 && represented_by_first(copies[c]))
      continue;
    const std::vector<int> gpus(copies[c].begin(), copies[c].end());
    const CollectivePlan plan = plan_collective(cluster_, op, gpus, bytes);
    if (c == 0) {
      work.latency_s = plan.choice.latency_s;
      work.channels = plan.nccl_channels;
    }
    work.flows.insert(work.flows.end(), plan.flows.begin(), plan.flows.end());
    ++work.copies;
  }
  return work;
}

const CommWork& StragglerUnfolding::collective(const traces::Op& op)
{
  const auto key = std::make_tuple(op.group, static_cast<int>(op.collective), op.bytes);
  const auto found = collectives_.find(key);
  if (found != collectives_.end())
    return found->second;
  if (op.group < 0 || static_cast<size_t>(op.group) >= class_groups_.size())
    throw std::invalid_argument("straggler unfolding: op refers to unknown group " + std::to_string(op.group));
  return collectives_
      .emplace(key, copies_work(op.collective, class_groups_[static_cast<size_t>(op.group)].copies, op.bytes))
      .first->second;
}

const CommWork& StragglerUnfolding::message(int32_t src_rank, const traces::Op& send)
{
  const ParallelPlan& plan = workload_.plan;
  const RankCoord src = rank_coord(plan, src_rank);
  const int64_t dst_stage = rank_coord(plan, send.peer).stage;
  const size_t r = replica_class_of_[static_cast<size_t>(src.dp)], t = tp_class_of_[static_cast<size_t>(src.tp)];
  const auto key = std::make_tuple(src.stage, r, t, dst_stage, send.bytes);
  const auto found = messages_.find(key);
  if (found != messages_.end())
    return found->second;
  CommWork work;
  for (const int64_t d : classes_.replicas[r])
    for (const int64_t tp : classes_.tp_indices[t]) {
      const int a = static_cast<int>(global_rank(plan, {src.stage, d, tp}));
      const int b = static_cast<int>(global_rank(plan, {dst_stage, d, tp}));
      const bool first = work.copies == 0 && work.flows.empty();
      if (!first && represented_by_first({a, b}))
        continue;
      if (first)
        work.latency_s = plan_collective(cluster_, CollectiveOp::SendRecv, {a, b}, send.bytes).choice.latency_s;
      work.flows.push_back(Flow{a, b, send.bytes, 1});
      ++work.copies;
    }
  return messages_.emplace(key, std::move(work)).first->second;
}

void StragglerUnfolding::find_exclusive_tp_groups(const topo::ClusterGraph& graph)
{
  // Links of each TP class group's copies on the network (every ordered pair's route: a superset of what any
  // of its collectives uses); a group may run alone when no other TP class group touches one of them.
  std::vector<std::set<int>> links(class_groups_.size());
  std::map<int, int> users;
  for (size_t g = 0; g < class_groups_.size(); ++g) {
    if (class_groups_[g].kind != Kind::Tp)
      continue;
    const auto& copies = class_groups_[g].copies;
    for (size_t c = 0; c < copies.size(); ++c) {
      if (c > 0 && represented_by_first(copies[c]))
        continue;
      for (const int32_t a : copies[c])
        for (const int32_t b : copies[c])
          if (a != b)
            for (const int link : graph.route(a, b))
              links[g].insert(link);
    }
    for (const int link : links[g])
      ++users[link];
  }
  alone_.assign(class_groups_.size(), false);
  for (size_t g = 0; g < class_groups_.size(); ++g)
    if (class_groups_[g].kind == Kind::Tp) {
      alone_[g] = true;
      for (const int link : links[g])
        if (users[link] > 1)
          alone_[g] = false;
    }
}

bool StragglerUnfolding::may_run_alone(const traces::Op& op) const
{
  return op.kind == traces::OpKind::Collective && op.group >= 0 && static_cast<size_t>(op.group) < alone_.size() &&
         alone_[static_cast<size_t>(op.group)];
}

} // namespace gputwin::sim
