#pragma once
// Where the executor gets the flows of a program's communication ops: the folded workload's expander, or a
// trace's communicators as captured. Plain C++, no SimGrid.

#include "gputwin/sim/collective_plan.hpp"
#include "gputwin/traces/op_graph.hpp"

#include <cstdint>
#include <vector>

namespace gputwin::sim {

struct CommWork {
  std::vector<Flow> flows;
  double latency_s = 0; // NCCL's latency model (userbuffers transfers: their fixed cost), paid once after the flows
  int copies = 0;       // physical communicators (or message pairs) whose flows are included
  int channels = 0;     // NCCL channels (CTAs) a collective runs on at its size on each GPU (userbuffers: TE's CTAs,
                        // 1 for a copy-engine ring step: its flag kernel); 0: not known
};

// A NCCL collective whose transfer alone takes at most this share of NCCL's latency is latency-bound: an FP8 amax
// reduction (tens of bytes) moves in nanoseconds and waits microseconds. CommExpander gives it no flows, only the
// time its flows take alone -- NCCL's latency, its longest route's latency, its transfer alone (the closed form
// nccl-tests matches) --: sharing links could stretch only the transfer term, by the flows on its busiest link, for
// 8-way sharing at most 0.7 % of the collective's time. Its flows would cost as much as a large collective's
// (gpt3-175b FP8 on 4,096 H100s: 82 % of all flows were amax reductions of 16-48 bytes), and the bandwidth they take
// from other flows is as small.
inline constexpr double kLatencyBoundShare = 1e-3;

// True when `plan` is latency-bound (kLatencyBoundShare). Send/receive and all-to-all plans have no closed-form
// transfer time (their flows are the model): never.
inline bool latency_bound(const CollectivePlan& plan)
{
  if (plan.op == CollectiveOp::SendRecv || plan.op == CollectiveOp::AllToAll)
    return false;
  return plan.transfer_s <= kLatencyBoundShare * plan.choice.latency_s;
}

class CommSource {
public:
  virtual ~CommSource() = default;
  // The flows of collective `op`. Ranks are GPUs: rank r runs on GPU r.
  virtual const CommWork& collective(const traces::Op& op) = 0;
  // The flows of pipeline message `send` (kind Send) issued by `src_rank`.
  virtual const CommWork& message(int32_t src_rank, const traces::Op& send) = 0;
  // True when no other traffic can ever share `op`'s links (a TP collective of a folded workload whose links
  // nothing else uses): the executor may then time it without flows, exactly as SimGrid would.
  virtual bool may_run_alone(const traces::Op& op) const = 0;
};

} // namespace gputwin::sim
