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
