#include "gputwin/models/compute_duration_memo.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace gputwin {

namespace {

// A double's bits, with 0.0 and -0.0 (equal keys) alike.
uint64_t double_bits(double x)
{
  return x == 0 ? 0 : std::bit_cast<uint64_t>(x);
}

uint64_t mix(uint64_t h, uint64_t v)
{
  uint64_t x = (h ^ v) * 0x9e3779b97f4a7c15ULL;
  return x ^ (x >> 32);
}

} // namespace

ComputeDurationMemo::Key::Key(const traces::Op& op)
    : flops(op.flops), bytes(op.bytes), gemm(op.gemm), kind(op.kind), name_size(op.name.size()), name(op.name)
{
  const size_t n = std::min<size_t>(name.size(), 8);
  if (n > 0) {
    std::memcpy(&name_head, name.data(), n);
    std::memcpy(&name_tail, name.data() + name.size() - n, n);
  }
}

bool ComputeDurationMemo::Key::operator==(const Key& o) const
{
  return flops == o.flops && bytes == o.bytes && gemm == o.gemm && kind == o.kind && name_size == o.name_size &&
         name_head == o.name_head && name_tail == o.name_tail && (name_size <= 16 || name == o.name);
}

uint64_t ComputeDurationMemo::Key::hash() const
{
  uint64_t h = mix(double_bits(flops), double_bits(bytes));
  h = mix(h, static_cast<uint64_t>(gemm.m) ^ (static_cast<uint64_t>(gemm.n) << 21) ^ (static_cast<uint64_t>(gemm.k) << 42));
  h = mix(h, static_cast<uint64_t>(gemm.batch) ^ (static_cast<uint64_t>(gemm.precision) << 48) ^
                 (static_cast<uint64_t>(gemm.comm_sms) << 32) ^ (static_cast<uint64_t>(kind) << 56) ^
                 (static_cast<uint64_t>(gemm.grouped) << 62));
  return mix(h, name_head ^ (name_tail * 31) ^ name_size);
}

ComputeDurationMemo::Slot& ComputeDurationMemo::find(const Key& key, uint64_t hash)
{
  const size_t mask = slots_.size() - 1;
  for (size_t i = static_cast<size_t>(hash) & mask;; i = (i + 1) & mask) {
    Slot& slot = slots_[i];
    if (!slot.used || (slot.hash == hash && slot.key == key))
      return slot;
  }
}

void ComputeDurationMemo::grow()
{
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(std::max<size_t>(64, 2 * old.size()), Slot{});
  for (const Slot& slot : old)
    if (slot.used) {
      const size_t mask = slots_.size() - 1;
      size_t i = static_cast<size_t>(slot.hash) & mask;
      while (slots_[i].used)
        i = (i + 1) & mask;
      slots_[i] = slot;
    }
}

double ComputeDurationMemo::operator()(const traces::Op& op)
{
  if (op.duration_ns >= 0)
    return static_cast<double>(op.duration_ns) * 1e-9;
  if (2 * (distinct_ + 1) > slots_.size())
    grow();
  const Key probe(op);
  const uint64_t hash = probe.hash();
  Slot& slot = find(probe, hash);
  if (slot.used)
    return slot.duration_s;
  const double duration_s = compute_duration_s(gpu_, op); // may throw (an unsupported precision): nothing stored
  slot.key = probe;
  slot.key.name = *names_.insert(op.name).first;
  slot.hash = hash;
  slot.duration_s = duration_s;
  slot.used = true;
  ++distinct_;
  return duration_s;
}

} // namespace gputwin
