#include "gputwin/models/compute_duration_memo.hpp"

#include <functional>

namespace gputwin {

size_t ComputeDurationMemo::KeyHash::operator()(const Key& k) const
{
  size_t h = std::hash<std::string_view>{}(k.name);
  const auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(static_cast<size_t>(k.kind));
  mix(std::hash<double>{}(k.flops));
  mix(std::hash<double>{}(k.bytes));
  mix(static_cast<size_t>(k.gemm.m));
  mix(static_cast<size_t>(k.gemm.n));
  mix(static_cast<size_t>(k.gemm.k));
  mix(static_cast<size_t>(k.gemm.batch));
  mix(static_cast<size_t>(k.gemm.precision));
  mix(static_cast<size_t>(k.gemm.comm_sms));
  mix(static_cast<size_t>(k.gemm.grouped));
  return h;
}

double ComputeDurationMemo::operator()(const traces::Op& op)
{
  if (op.duration_ns >= 0)
    return static_cast<double>(op.duration_ns) * 1e-9;
  const Key probe{op.kind, op.name, op.flops, op.bytes, op.gemm};
  if (const auto found = memo_.find(probe); found != memo_.end())
    return found->second;
  const double duration_s = compute_duration_s(gpu_, op); // may throw (an unsupported precision): nothing stored
  Key stored = probe;
  stored.name = names_.try_emplace(op.name, 0).first->first;
  memo_.emplace(stored, duration_s);
  return duration_s;
}

} // namespace gputwin
