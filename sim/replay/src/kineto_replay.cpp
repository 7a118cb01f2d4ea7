#include "gputwin/sim/kineto_replay.hpp"

#include <algorithm>
#include <stdexcept>

namespace gputwin::sim {

HostProgram kineto_host_program(const traces::KinetoTrace& trace)
{
  HostProgram host;
  host.issue_cost_s.reserve(trace.host.issue_gap_ns.size());
  for (const int64_t gap_ns : trace.host.issue_gap_ns)
    host.issue_cost_s.push_back(static_cast<double>(gap_ns) * 1e-9);
  host.syncs = trace.host.syncs;
  host.launch_latency_s = static_cast<double>(trace.host.launch_latency_ns) * 1e-9;
  return host;
}

std::function<double(size_t, const traces::Op&)> kineto_compute_duration(const KinetoScales& scales)
{
  return [scales](size_t, const traces::Op& op) {
    const double measured_s = static_cast<double>(std::max<int64_t>(0, op.duration_ns)) * 1e-9;
    // Copies between host and device run over PCIe at the host's pace: not the GPU's.
    const bool host_copy = op.kind == traces::OpKind::Memcpy && op.name.find("DtoD") == std::string::npos;
    return host_copy ? measured_s : measured_s / scales.compute;
  };
}

const CommWork& KinetoCommSource::collective(const traces::Op& op)
{
  const auto key = std::make_pair(op.group, op.sequence);
  const auto found = collectives_.find(key);
  if (found != collectives_.end())
    return found->second;
  CommWork work;
  work.latency_s = static_cast<double>(std::max<int64_t>(0, op.duration_ns)) * 1e-9 / comm_scale_;
  work.copies = 1;
  return collectives_.emplace(key, std::move(work)).first->second;
}

const CommWork& KinetoCommSource::message(int32_t, const traces::Op&)
{
  throw std::logic_error("KinetoCommSource: a Kineto replay has no point-to-point messages");
}

} // namespace gputwin::sim
