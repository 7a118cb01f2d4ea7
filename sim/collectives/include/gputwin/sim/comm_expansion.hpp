#pragma once
// The flows behind each communication op of a folded workload. One program stands for the t x d ranks of its
// stage, so a collective or a pipeline message of that program stands for one copy per folded rank group;
// every copy that could share a link with another (it leaves its node) is put on the network, and copies
// that stay inside one node -- whose NVLink/PCIe links no other copy touches -- are represented by the
// program's own copy -- unless a fault (--degrade-link, --fail-link, --fail-nic) is on their node: such a copy is
// put on the links too, so a fault on any replica slows the folded program as one on replica 0 does. Plain C++,
// no SimGrid.

#include "gputwin/models/expert_load.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/comm_source.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <map>
#include <tuple>
#include <vector>

namespace gputwin::sim {

class CommExpander : public CommSource {
public:
  // Ranks are GPUs: rank r runs on GPU r of `cluster`. REQUIRES: cluster.gpus() >= plan.gpus().
  CommExpander(const topo::ClusterSpec& cluster, const Workload& workload);
  // With the cluster's routes: a context-parallel exchange's copies whose links no other copy touches (rings
  // under one leaf switch, on their own rails) are represented by the program's own copy as the copies inside
  // one node are -- one copy instead of dp x tp, so long-context plans stay fast.
  CommExpander(const topo::ClusterGraph& graph, const Workload& workload);

  // The flows of collective `op` (kind Collective) of a stage program, all copies: NCCL's (plan_collective), or for
  // --tp-comm-overlap's `tp.ring_exchange` / `tp.reduce_scatter_chunk` TE userbuffers' (plan_userbuffers). Cached.
  const CommWork& collective(const traces::Op& op) override;
  // The flows of a pipeline message `send` from `src_rank`'s program, all copies. Cached.
  const CommWork& message(int32_t src_rank, const traces::Op& send) override;
  // TP collectives: their groups' links carry nothing else unless a flow of other communication crosses them,
  // which the executor checks before timing them alone.
  bool may_run_alone(const traces::Op& op) const override;
  // The flows of a pipeline message of `bytes` from the program of stage `src_stage` to that of `dst_stage`.
  const CommWork& message(int64_t src_stage, int64_t dst_stage, double bytes);

private:
  std::vector<std::vector<int32_t>> copies_of_group(int32_t group) const;
  bool within_one_domain(const std::vector<int32_t>& ranks) const; // all in one NVLink domain
  // A degraded or failed cable ends on the node of GPU `rank` (ClusterGraph::node_faulted); false without routes.
  bool on_faulted_node(int32_t rank) const;
  // A copy (c > 0) that copy 0 stands for: inside one NVLink domain, so link-disjoint from every other copy, and
  // on no faulted node, so timed as copy 0 is.
  bool represented_by_first(const std::vector<int32_t>& ranks) const;
  // Copies (by index) whose flows' links no other copy uses; empty without routes.
  std::vector<bool> link_disjoint_copies(const std::vector<std::vector<Flow>>& copy_flows) const;

  // DeepEP's RDMA bytes per routed copy that crosses nodes, for an EP group on `ep_ranks` (one copy of a token per
  // destination node; CollectiveOptions::internode_share).
  double deepep_internode_share(const std::vector<int32_t>& ep_ranks) const;

  const topo::ClusterSpec& cluster_;
  const topo::ClusterGraph* graph_ = nullptr;
  const Workload& workload_;
  std::map<std::tuple<int32_t, int, double, int>, CommWork> collectives_; // (group, op, bytes, UserbuffersOp)
  std::map<std::tuple<int64_t, int64_t, double>, CommWork> messages_;
};

} // namespace gputwin::sim
