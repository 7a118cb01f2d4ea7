#include "gputwin/sim/userbuffers_cost.hpp"

#include "gputwin/models/op_vocabulary.hpp"

#include <set>
#include <stdexcept>
#include <string>

namespace gputwin::sim {

UserbuffersOp userbuffers_op(const traces::Op& op)
{
  if (op.kind != traces::OpKind::Collective)
    return UserbuffersOp::None;
  if (op.name == op_name(OpName::TpRingExchange))
    return UserbuffersOp::RingExchange;
  if (op.name == op_name(OpName::TpReduceScatterChunk))
    return UserbuffersOp::ReduceScatter;
  return UserbuffersOp::None;
}

int userbuffers_ctas(UserbuffersOp op)
{
  switch (op) {
  case UserbuffersOp::RingExchange: return userbuffers_ring_exchange_ctas;
  case UserbuffersOp::ReduceScatter: return userbuffers_reduce_scatter_ctas;
  case UserbuffersOp::None: break;
  }
  throw std::invalid_argument("userbuffers: not a userbuffers transfer");
}

CollectivePlan plan_userbuffers(const topo::ClusterSpec& cluster, UserbuffersOp ub, const std::vector<int>& gpus,
                                double bytes)
{
  if (ub == UserbuffersOp::None)
    throw std::invalid_argument("userbuffers: not a userbuffers transfer");
  if (gpus.empty())
    throw std::invalid_argument("userbuffers: no ranks");
  if (!(bytes >= 0))
    throw std::invalid_argument("userbuffers: bytes must be >= 0");
  std::set<int> seen;
  std::set<int> nodes;
  for (const int g : gpus) {
    if (g < 0 || g >= cluster.gpus())
      throw std::invalid_argument("userbuffers: GPU " + std::to_string(g) + " is not in the cluster");
    if (!seen.insert(g).second)
      throw std::invalid_argument("userbuffers: GPU " + std::to_string(g) + " appears twice");
    nodes.insert(cluster.domain_of_gpu(g));
  }
  CollectivePlan plan;
  plan.op = ub == UserbuffersOp::RingExchange ? CollectiveOp::SendRecv : CollectiveOp::ReduceScatter;
  plan.bytes = bytes;
  plan.ranks = static_cast<int>(gpus.size());
  plan.nodes = static_cast<int>(nodes.size());
  plan.channels = 1;
  plan.nccl_channels = userbuffers_ctas(ub);
  // Not NCCL's choice: the fields say what the transfer is, the latency is userbuffers' own.
  plan.choice.algorithm = NcclAlgorithm::Ring;
  plan.choice.protocol = NcclProtocol::Simple;
  plan.choice.latency_s = plan.ranks > 1 && bytes > 0 ? cluster.nccl.userbuffers_latency_s : 0.0;
  if (plan.ranks == 1 || bytes == 0)
    return plan;
  const size_t n = gpus.size();
  if (ub == UserbuffersOp::RingExchange) {
    // TE's ring_exchange: rank i sends to (i + 1) mod n and receives from (i - 1) mod n every step.
    for (size_t i = 0; i < n; ++i)
      plan.flows.push_back(Flow{gpus[i], gpus[(i + 1) % n], bytes, 1});
  } else {
    // reducescatter2_userbuff_strided: every rank reads its 1/n slice of each peer's partial output.
    const double slice = bytes / static_cast<double>(n);
    for (const int src : gpus)
      for (const int dst : gpus)
        if (src != dst)
          plan.flows.push_back(Flow{src, dst, slice, 1});
  }
  // Alone on ideal links: every GPU sends (ring) bytes or (reduce-scatter) (n - 1)/n bytes over its own link.
  const double per_gpu = ub == UserbuffersOp::RingExchange ? bytes : bytes * static_cast<double>(n - 1) / static_cast<double>(n);
  plan.transfer_s = per_gpu / ring_bus_bytes_per_s(cluster, gpus);
  return plan;
}

} // namespace gputwin::sim
