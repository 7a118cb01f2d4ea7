#pragma once
// The flows of a captured trace's communication, as captured: each collective on its own communicator's GPUs
// (rank r on GPU r), each pipeline message one flow, no folding. Plain C++.

#include "gputwin/sim/comm_source.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <map>
#include <tuple>

namespace gputwin::sim {

class TraceCommSource : public CommSource {
public:
  // REQUIRES: every rank of `groups` is a GPU of `cluster`.
  TraceCommSource(const topo::ClusterSpec& cluster, const std::vector<traces::CommGroup>& groups);

  const CommWork& collective(const traces::Op& op) override;
  const CommWork& message(int32_t src_rank, const traces::Op& send) override;
  bool may_run_alone(const traces::Op&) const override { return false; }

private:
  const topo::ClusterSpec& cluster_;
  const std::vector<traces::CommGroup>& groups_;
  std::map<std::tuple<int32_t, int, double>, CommWork> collectives_;
  std::map<std::tuple<int32_t, int32_t, double>, CommWork> messages_;
};

} // namespace gputwin::sim
