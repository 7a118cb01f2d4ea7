#include "gputwin/models/compute_duration_memo.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

namespace gputwin {

namespace {

// A double's bits, with 0.0 and -0.0 (equal keys) alike.
uint64_t double_bits(double x)
{
  return x == 0 ? 0 : std::bit_cast<uint64_t>(x);
}

// The name's length and its first and last (up to) 8 bytes: with the numbers that tells the ops of a workload apart
// without hashing every byte (equal hashes are told apart by the keys' equality).
uint64_t name_bits(std::string_view name)
{
  uint64_t head = 0, tail = 0;
  const size_t n = std::min<size_t>(name.size(), 8);
  if (n > 0) {
    std::memcpy(&head, name.data(), n);
    std::memcpy(&tail, name.data() + name.size() - n, n);
  }
  return head ^ (tail * 0x100000001b3ULL) ^ name.size();
}

} // namespace

size_t ComputeDurationMemo::KeyHash::operator()(const Key& k) const
{
  size_t h = static_cast<size_t>(name_bits(k.name));
  const auto mix = [&h](uint64_t v) { h ^= static_cast<size_t>(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  mix(static_cast<uint64_t>(k.kind));
  mix(double_bits(k.flops));
  mix(double_bits(k.bytes));
  mix(static_cast<uint64_t>(k.gemm.m));
  mix(static_cast<uint64_t>(k.gemm.n));
  mix(static_cast<uint64_t>(k.gemm.k));
  mix(static_cast<uint64_t>(k.gemm.batch));
  mix(static_cast<uint64_t>(k.gemm.precision));
  mix(static_cast<uint64_t>(k.gemm.comm_sms));
  return h;
}

double ComputeDurationMemo::operator()(const traces::Op& op)
{
  if (op.duration_ns >= 0)
    return static_cast<double>(op.duration_ns) * 1e-9;
  const Key probe{op.flops, op.bytes, op.gemm, op.kind, op.name};
  if (const auto found = memo_.find(probe); found != memo_.end())
    return found->second;
  const double duration_s = compute_duration_s(gpu_, op); // may throw (an unsupported precision): nothing stored
  Key stored = probe;
  stored.name = names_.try_emplace(op.name, 0).first->first;
  memo_.emplace(stored, duration_s);
  return duration_s;
}

} // namespace gputwin
