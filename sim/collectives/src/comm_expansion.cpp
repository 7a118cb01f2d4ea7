#include "gputwin/sim/comm_expansion.hpp"

#include "gputwin/models/op_vocabulary.hpp"
#include "gputwin/models/rank_layout.hpp"
#include "gputwin/models/token_exchange.hpp"
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

double CommExpander::deepep_internode_share(const std::vector<int32_t>& ep_ranks) const
{
  std::set<int32_t> nodes; // DeepEP's nodes: NVLink domains (its NVLink buffers reach every GPU of one)
  for (const int32_t r : ep_ranks)
    nodes.insert(cluster_.domain_of_gpu(r));
  const double M = static_cast<double>(nodes.size());
  const MoeConfig& moe = workload_.model.moe;
  if (M <= 1 || moe.topk <= 0)
    return 1.0;
  // P(a node receives none of a token's choices): k experts of E drawn without replacement, E/M on each node; with
  // group-limited routing (DeepSeek-V3: n_group groups, topk_group of them per token) the token's groups instead.
  const bool grouped = moe.router_groups > 0 && moe.router_groups % static_cast<int64_t>(M) == 0;
  const double pool = grouped ? static_cast<double>(moe.router_groups) : static_cast<double>(moe.experts);
  const int64_t picks = grouped ? moe.router_group_topk : moe.topk;
  double none = 1.0;
  for (int64_t i = 0; i < picks; ++i)
    none *= std::max(0.0, pool - pool / M - static_cast<double>(i)) / (pool - static_cast<double>(i));
  // RDMA copies per token (one per node used) over the routed copies that cross to that node (k / M per node).
  return std::min(1.0, (1.0 - none) * M / static_cast<double>(moe.topk));
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

bool CommExpander::within_one_domain(const std::vector<int32_t>& ranks) const
{
  for (const int32_t r : ranks)
    if (!cluster_.same_nvlink_domain(r, ranks.front()))
      return false;
  return true;
}

bool CommExpander::on_faulted_node(int32_t rank) const
{
  return graph_ != nullptr && graph_->node_faulted(graph_->node_of_gpu(rank));
}

bool CommExpander::represented_by_first(const std::vector<int32_t>& ranks) const
{
  return within_one_domain(ranks) &&
         std::none_of(ranks.begin(), ranks.end(), [&](int32_t r) { return on_faulted_node(r); });
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
  case GroupKind::Ep:
    for (int64_t d = 0; d < plan.expert_dp(); ++d)
      for (int64_t t = 0; t < plan.expert_tp(); ++t)
        copies.push_back(ep_group_ranks(plan, role.stage, t, d));
    break;
  case GroupKind::Etp:
    for (int64_t d = 0; d < plan.expert_dp(); ++d)
      for (int64_t e = 0; e < plan.ep; ++e)
        copies.push_back(etp_group_ranks(plan, role.stage, e, d));
    break;
  case GroupKind::Edp:
    for (int64_t e = 0; e < plan.ep; ++e)
      for (int64_t t = 0; t < plan.expert_tp(); ++t)
        copies.push_back(edp_group_ranks(plan, role.stage, t, e));
    break;
  }
  return copies;
}

const CommWork& CommExpander::collective(const traces::Op& op)
{
  // --tp-comm-overlap's chunk ops are TE userbuffers transfers, costed as such (userbuffers_cost.hpp); every other
  // collective is a NCCL call.
  const UserbuffersOp ub = userbuffers_op(op);
  // A MoE token all-to-all under imbalance: per-pair bytes from the layer's EP-rank loads (expert_load.hpp).
  CollectiveOptions options;
  int skew = 0; // 0: even; 1: receiver-weighted (dispatch); 2: sender-weighted (combine)
  if (op.collective == CollectiveOp::AllToAll && workload_.role(op.group).kind == GroupKind::Ep) {
    options.all_to_all.at_sender = returns_tokens(op);
    if (workload_.plan.dispatcher == MoeDispatcher::DeepEp) {
      options.two_hop = true;
      options.internode_share = deepep_internode_share(copies_of_group(op.group).front());
      skew = options.all_to_all.at_sender ? 2 : 1;
    }
    if (std::optional<AllToAllWeights> weights =
            workload_.expert_loads ? token_exchange_weights(*workload_.expert_loads, op) : std::nullopt) {
      options.all_to_all = std::move(*weights);
      skew = options.all_to_all.at_sender ? 2 : 1;
    }
  }
  const auto key = std::make_tuple(op.group, static_cast<int>(op.collective), op.bytes,
                                   static_cast<int>(ub) + 16 * skew + 64 * (skew ? op.layer : 0));
  const auto found = collectives_.find(key);
  if (found != collectives_.end())
    return found->second;
  CommWork work;
  const std::vector<std::vector<int32_t>> copies = copies_of_group(op.group);
  std::vector<CollectivePlan> plans(copies.size());
  for (size_t c = 0; c < copies.size(); ++c) {
    if (c > 0 && represented_by_first(copies[c]))
      continue;
    const std::vector<int> gpus(copies[c].begin(), copies[c].end());
    plans[c] = ub == UserbuffersOp::None ? plan_collective(cluster_, op.collective, gpus, op.bytes, options)
                                         : plan_userbuffers(cluster_, ub, gpus, op.bytes);
  }
  std::vector<bool> disjoint;
  // (With faults every context-parallel copy is on the links: a faulted cable may be on any copy's routes.)
  if (workload_.role(op.group).kind == GroupKind::Cp && graph_ != nullptr && graph_->spec().faults.empty()) {
    std::vector<std::vector<Flow>> flows;
    for (const CollectivePlan& p : plans)
      flows.push_back(p.flows);
    disjoint = link_disjoint_copies(flows);
  }
  for (size_t c = 0; c < copies.size(); ++c) {
    if (c > 0 && (represented_by_first(copies[c]) || (!disjoint.empty() && disjoint[c])))
      continue; // link-disjoint from every other copy and timed alike: represented by copy 0
    const CollectivePlan& plan = plans[c];
    if (c == 0) {
      work.latency_s = plan.choice.latency_s;
      work.channels = plan.nccl_channels; // userbuffers: TE's CTAs (userbuffers_ctas)
    }
    work.flows.insert(work.flows.end(), plan.flows.begin(), plan.flows.end());
    ++work.copies;
  }
  if (ub == UserbuffersOp::None && graph_ != nullptr && latency_bound(plans.front())) {
    double route_latency_s = 0; // the longest route's, paid before a flow's transfer (flow_runner.hpp)
    for (const Flow& f : work.flows)
      route_latency_s = std::max(route_latency_s, graph_->path_latency_s(graph_->route(f.src_gpu, f.dst_gpu)));
    work.flows.clear();
    work.latency_s = plans.front().choice.latency_s + route_latency_s + plans.front().transfer_s;
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
      if (!first && cluster_.same_nvlink_domain(src, dst) && !on_faulted_node(src) && !on_faulted_node(dst))
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
