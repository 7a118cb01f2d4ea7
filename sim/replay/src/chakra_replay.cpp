#include "gputwin/sim/chakra_replay.hpp"

#include "gputwin/sim/progress_check.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <algorithm>
#include <set>

namespace gputwin::sim {

void check_chakra_graph(const traces::OpGraph& graph)
{
  traces::OpGraph simulated = graph;
  std::set<int32_t> have;
  for (const traces::RankProgram& p : graph.ranks)
    have.insert(p.rank);
  for (traces::CommGroup& g : simulated.groups)
    g.ranks.erase(std::remove_if(g.ranks.begin(), g.ranks.end(), [&](int32_t r) { return have.count(r) == 0; }),
                  g.ranks.end());
  traces::validate_op_graph(simulated);
  check_progress(simulated);
}

std::function<double(size_t, const traces::Op&)> chakra_compute_duration(const GpuComputeModel& gpu, bool use_recorded)
{
  return [gpu, use_recorded](size_t, const traces::Op& op) {
    if (use_recorded && op.duration_ns >= 0)
      return static_cast<double>(op.duration_ns) * 1e-9;
    double seconds = compute_duration_s(gpu, op);
    if (op.flops > 0 && op.gemm.m == 0 && gpu.peak_flops > 0 && gpu.gemm_efficiency > 0)
      seconds = std::max(seconds, op.flops / (gpu.peak_flops * gpu.gemm_efficiency) + gpu.kernel_overhead_s);
    return seconds;
  };
}

} // namespace gputwin::sim
