#include "gputwin/sim/trace_comm_source.hpp"

namespace gputwin::sim {

TraceCommSource::TraceCommSource(const topo::ClusterSpec& cluster, const std::vector<traces::CommGroup>& groups)
    : cluster_(cluster), groups_(groups)
{
}

const CommWork& TraceCommSource::collective(const traces::Op& op)
{
  const auto key = std::make_tuple(op.group, static_cast<int>(op.collective), op.bytes);
  const auto found = collectives_.find(key);
  if (found != collectives_.end())
    return found->second;
  const traces::CommGroup& group = groups_.at(static_cast<size_t>(op.group));
  const std::vector<int> gpus(group.ranks.begin(), group.ranks.end());
  const CollectivePlan plan = plan_collective(cluster_, op.collective, gpus, op.bytes);
  return collectives_.emplace(key, CommWork{plan.flows, plan.choice.latency_s, 1, plan.nccl_channels}).first->second;
}

const CommWork& TraceCommSource::message(int32_t src_rank, const traces::Op& send)
{
  const auto key = std::make_tuple(src_rank, send.peer, send.bytes);
  const auto found = messages_.find(key);
  if (found != messages_.end())
    return found->second;
  const CollectivePlan p2p = plan_collective(cluster_, CollectiveOp::SendRecv, {src_rank, send.peer}, send.bytes);
  CommWork work{{Flow{src_rank, send.peer, send.bytes, 1}}, p2p.choice.latency_s, 1};
  return messages_.emplace(key, std::move(work)).first->second;
}

} // namespace gputwin::sim
