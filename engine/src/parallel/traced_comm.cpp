#include "gputwin/engine/parallel/traced_comm.hpp"

#include <cstring>

namespace gputwin::engine {

int64_t TracedComm::begin(CollectiveOp op, double bytes, const std::string& name)
{
  traces::Op o;
  o.kind = traces::OpKind::Collective;
  o.name = name;
  o.stream = static_cast<int32_t>(stream_);
  o.collective = op;
  o.group = group_;
  o.bytes = bytes;
  o.sequence = tracer_->next_collective_sequence(group_);
  return tracer_->begin(std::move(o));
}

void TracedComm::all_reduce(const Tensor& t, int64_t count, ReduceOp op, const std::string& name)
{
  if (size() == 1)
    return;
  // nccl-tests size of an all-reduce: the buffer.
  const int64_t index = begin(CollectiveOp::AllReduce, static_cast<double>(count * dtype_bytes(t.dtype())), name);
  comm_->all_reduce(t.raw(), count, t.dtype(), op);
  tracer_->end(index);
}

void TracedComm::all_gather(const Tensor& in, const Tensor& out, int64_t count, const std::string& name)
{
  if (size() == 1) {
    if (in.raw() != out.raw())
      std::memcpy(out.raw(), in.raw(), static_cast<size_t>(count * dtype_bytes(in.dtype())));
    return;
  }
  // nccl-tests size of an all-gather: the whole gathered array.
  const int64_t index =
      begin(CollectiveOp::AllGather, static_cast<double>(size() * count * dtype_bytes(in.dtype())), name);
  comm_->all_gather(in.raw(), out.raw(), count, in.dtype());
  tracer_->end(index);
}

void TracedComm::reduce_scatter(const Tensor& in, const Tensor& out, int64_t count, const std::string& name)
{
  if (size() == 1) {
    if (in.raw() != out.raw())
      std::memcpy(out.raw(), in.raw(), static_cast<size_t>(count * dtype_bytes(in.dtype())));
    return;
  }
  // nccl-tests size of a reduce-scatter: the whole input array.
  const int64_t index =
      begin(CollectiveOp::ReduceScatter, static_cast<double>(size() * count * dtype_bytes(in.dtype())), name);
  comm_->reduce_scatter(in.raw(), out.raw(), count, in.dtype());
  tracer_->end(index);
}

} // namespace gputwin::engine
