#include "gputwin/sim/comm_expansion.hpp"

#include "gputwin/models/rank_layout.hpp"
#include "gputwin/sim/userbuffers_cost.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace gputwin::sim {

CommExpander::CommExpander(const topo::ClusterSpec& cluster, const Workload& workload)
    : cluster_(cluster), workload_(workload)
{
}

CommExpander::CommExpander(const topo::ClusterGraph& graph, const Workload& workload)
    : cluster_(graph.spec()), graph_(&graph), workload_(workload)
{
}

std::vector<bool> CommExpander::link_disjoint_copies(const std::vector<std::vector<Flow>>& copy_flows) const
{
  if (graph_ == nullptr)
    return {};
  std::map<int, size_t> users; // link -> copies using it (counted once per copy)
  std::vector<std::set<int>> links(copy_flows.size());
  for (size_t c = 0; c < copy_flows.size(); ++c) {
    for (const Flow& f : copy_flows[c])
      for (const int link : graph_->route(f.src_gpu, f.dst_gpu))
        links[c].insert(link);
    for (const int link : links[c])
      ++users[link];
  }
  std::vector<bool> disjoint(copy_flows.size(), false);
  for (size_t c = 0; c < copy_flows.size(); ++c)
    disjoint[c] = std::all_of(links[c].begin(), links[c].end(), [&](int link) { return users[link] == 1; });
  return disjoint;
}

bool CommExpander::within_one_node(const std::vector<int32_t>& ranks) const
{
  for (const int32_t r : ranks)
    if (r / cluster_.gpus_per_node != ranks.front() / cluster_.gpus_per_node)
      return false;
  return true;
}

std::vector<std::vector<int32_t>> CommExpander::copies_of_group(int32_t group) const
{
  const ParallelPlan& plan = workload_.plan;
  std::vector<std::vector<int32_t>> copies;
  if (group < 0 || static_cast<size_t>(group) >= workload_.roles.size())
    throw std::invalid_argument("comm expansion: op refers to unknown group " + std::to_string(group));
  const WorkloadGroup& role = workload_.role(group);
  switch (role.kind) {
  case GroupKind::Embedding:
    for (int64_t d = 0; d < plan.dp; ++d)
      for (int64_t c = 0; c < plan.cp; ++c)
        for (int64_t t = 0; t < plan.tp; ++t)
          copies.push_back({static_cast<int32_t>(global_rank(plan, {0, d, t, c})),
                            static_cast<int32_t>(global_rank(plan, {plan.pp - 1, d, t, c}))});
    break;
  case GroupKind::Tp:
    for (int64_t d = 0; d < plan.dp; ++d)
      for (int64_t c = 0; c < plan.cp; ++c)
        copies.push_back(tp_group_ranks(plan, role.stage, d, c));
    break;
  case GroupKind::Dp:
    for (int64_t t = 0; t < plan.tp; ++t)
      copies.push_back(dp_group_ranks(plan, role.stage, t));
    break;
  case GroupKind::Cp:
    for (int64_t d = 0; d < plan.dp; ++d)
      for (int64_t t = 0; t < plan.tp; ++t)
        copies.push_back(cp_group_ranks(plan, role.stage, d, t));
    break;
  }
  return copies;
}

const CommWork& CommExpander::collective(const traces::Op& op)
{
  // --tp-comm-overlap's chunk ops are TE userbuffers transfers, costed as such (userbuffers_cost.hpp); every other
  // collective is a NCCL call.
  const UserbuffersOp ub = userbuffers_op(op);
  const auto key = std::make_tuple(op.group, static_cast<int>(op.collective), op.bytes, static_cast<int>(ub));
  const auto found = collectives_.find(key);
  if (found != collectives_.end())
    return found->second;
  CommWork work;
  const std::vector<std::vector<int32_t>> copies = copies_of_group(op.group);
  std::vector<CollectivePlan> plans(copies.size());
  for (size_t c = 0; c < copies.size(); ++c) {
    if (c > 0 && within_one_node(copies[c]))
      continue; // link-disjoint from every other copy: represented by copy 0
    const std::vector<int> gpus(copies[c].begin(), copies[c].end());
    plans[c] = ub == UserbuffersOp::None ? plan_collective(cluster_, op.collective, gpus, op.bytes)
                                         : plan_userbuffers(cluster_, ub, gpus, op.bytes);
  }
  std::vector<bool> disjoint;
  if (workload_.role(op.group).kind == GroupKind::Cp) {
    std::vector<std::vector<Flow>> flows;
    for (const CollectivePlan& p : plans)
      flows.push_back(p.flows);
    disjoint = link_disjoint_copies(flows);
  }
  for (size_t c = 0; c < copies.size(); ++c) {
    if (c > 0 && (within_one_node(copies[c]) || (!disjoint.empty() && disjoint[c])))
      continue; // link-disjoint from every other copy: represented by copy 0
    const CollectivePlan& plan = plans[c];
    if (c == 0) {
      work.latency_s = plan.choice.latency_s;
      work.channels = plan.nccl_channels; // userbuffers: TE's CTAs (userbuffers_ctas)
    }
    work.flows.insert(work.flows.end(), plan.flows.begin(), plan.flows.end());
    ++work.copies;
  }
  return collectives_.emplace(key, std::move(work)).first->second;
}

const CommWork& CommExpander::message(int64_t src_stage, int64_t dst_stage, double bytes)
{
  const auto key = std::make_tuple(src_stage, dst_stage, bytes);
  const auto found = messages_.find(key);
  if (found != messages_.end())
    return found->second;
  const ParallelPlan& plan = workload_.plan;
  CommWork work;
  for (int64_t d = 0; d < plan.dp; ++d)
    for (int64_t c = 0; c < plan.cp; ++c)
    for (int64_t t = 0; t < plan.tp; ++t) {
      const int src = static_cast<int>(global_rank(plan, {src_stage, d, t, c}));
      const int dst = static_cast<int>(global_rank(plan, {dst_stage, d, t, c}));
      const bool first = d == 0 && c == 0 && t == 0;
      if (!first && src / cluster_.gpus_per_node == dst / cluster_.gpus_per_node)
        continue;
      if (first) {
        const CollectivePlan p2p = plan_collective(cluster_, CollectiveOp::SendRecv, {src, dst}, bytes);
        work.latency_s = p2p.choice.latency_s;
      }
      work.flows.push_back(Flow{src, dst, bytes, 1});
      ++work.copies;
    }
  return messages_.emplace(key, std::move(work)).first->second;
}

const CommWork& CommExpander::message(int32_t src_rank, const traces::Op& send)
{
  return message(rank_coord(workload_.plan, src_rank).stage, rank_coord(workload_.plan, send.peer).stage, send.bytes);
}

bool CommExpander::may_run_alone(const traces::Op& op) const
{
  return op.kind == traces::OpKind::Collective && op.group >= 0 &&
         static_cast<size_t>(op.group) < workload_.roles.size() && workload_.role(op.group).kind == GroupKind::Tp;
}

} // namespace gputwin::sim
