#include "gputwin/models/op_emitter.hpp"

namespace gputwin {

void OpEmitter::set_context(traces::Phase phase, int32_t layer, int32_t micro_batch, int32_t chunk)
{
  phase_ = phase;
  layer_ = layer;
  micro_batch_ = micro_batch;
  chunk_ = chunk;
}

traces::Op& OpEmitter::add(const traces::InternedName& name, traces::OpKind kind, int32_t stream, std::vector<int64_t> deps)
{
  traces::Op& op = out_.emplace_back();
  op.id = next_id_++;
  op.kind = kind;
  op.name = name;
  op.phase = phase_;
  op.layer = layer_;
  op.micro_batch = micro_batch_;
  op.chunk = chunk_;
  op.stream = stream;
  op.deps = std::move(deps);
  if (stream == compute_stream)
    last_compute_ = op.id;
  return op;
}

int64_t OpEmitter::compute(OpName name, const OpCost& cost, std::vector<int64_t> deps)
{
  traces::Op& op = add(interned_op_name(name), traces::OpKind::Compute, compute_stream, std::move(deps));
  op.flops = cost.flops;
  op.bytes = cost.bytes;
  op.gemm = cost.gemm;
  return op.id;
}

int64_t OpEmitter::collective(const traces::InternedName& name, CollectiveOp kind, int32_t group, double bytes, int32_t stream,
                              std::vector<int64_t> deps)
{
  traces::Op& op = add(name, traces::OpKind::Collective, stream, std::move(deps));
  op.collective = kind;
  op.group = group;
  op.bytes = bytes;
  op.sequence = group_sequence_[group]++;
  return op.id;
}

int64_t OpEmitter::send(const traces::InternedName& name, int32_t peer, int64_t sequence, double bytes, std::vector<int64_t> deps)
{
  traces::Op& op = add(name, traces::OpKind::Send, send_stream, std::move(deps));
  op.peer = peer;
  op.sequence = sequence;
  op.bytes = bytes;
  return op.id;
}

int64_t OpEmitter::recv(const traces::InternedName& name, int32_t peer, int64_t sequence, double bytes)
{
  traces::Op& op = add(name, traces::OpKind::Recv, recv_stream, {});
  op.peer = peer;
  op.sequence = sequence;
  op.bytes = bytes;
  return op.id;
}

int64_t OpEmitter::replay(const traces::Op& source, int32_t stream, int32_t group, std::vector<int64_t> deps)
{
  const traces::Phase phase = phase_;
  phase_ = source.phase;
  traces::Op& op = add(source.name, source.kind, stream, std::move(deps));
  phase_ = phase;
  op.flops = source.flops;
  op.bytes = source.bytes;
  op.gemm = source.gemm;
  op.duration_ns = source.duration_ns;
  if (source.kind == traces::OpKind::Collective) {
    op.collective = source.collective;
    op.group = group;
    op.sequence = group_sequence_[group]++;
  }
  return op.id;
}

} // namespace gputwin
