#include "gputwin/engine/parallel/traced_comm.hpp"

#include <cstring>
#include <stdexcept>
#include <vector>

namespace gputwin::engine {

namespace {
// Whether `comm` takes these tensors' memory as it is (else they are staged through host memory).
bool direct(const Communicator& comm, const Tensor& a, const Tensor& b)
{
  if (a.device() != b.device())
    throw std::logic_error("TracedComm: " + a.describe() + " on " + to_string(a.device()) + " and " + b.describe() +
                           " on " + to_string(b.device()));
  if (comm.reaches(a.device()))
    return true;
  if (!comm.reaches(Device::Cpu))
    throw std::logic_error("TracedComm: the communicator reaches neither " + to_string(a.device()) +
                           " nor host memory");
  return false;
}
} // namespace

int64_t TracedComm::begin(CollectiveOp op, double bytes, const std::string& name)
{
  backend_->begin_range(name);
  backend_->communication_waits_for_compute();
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
  const int64_t bytes = count * dtype_bytes(t.dtype());
  const int64_t index = begin(CollectiveOp::AllReduce, static_cast<double>(bytes), name);
  if (direct(*comm_, t, t)) {
    comm_->all_reduce(t.raw(), count, t.dtype(), op);
  } else {
    std::vector<char> host(static_cast<size_t>(bytes));
    backend_->download(host.data(), t, bytes);
    comm_->all_reduce(host.data(), count, t.dtype(), op);
    backend_->upload(t, host.data(), bytes);
  }
  end(index);
}

void TracedComm::end(int64_t index)
{
  tracer_->end(index);
  backend_->compute_waits_for_communication();
  backend_->end_range();
}

// A collective of one rank: its output is its input.
void TracedComm::copy_alone(const Tensor& in, const Tensor& out, int64_t bytes)
{
  if (in.device() != Device::Cpu || out.device() != Device::Cpu)
    backend_->copy_bytes(out, in, bytes);
  else if (in.raw() != out.raw())
    std::memcpy(out.raw(), in.raw(), static_cast<size_t>(bytes));
}

void TracedComm::all_gather(const Tensor& in, const Tensor& out, int64_t count, const std::string& name)
{
  const int64_t bytes = count * dtype_bytes(in.dtype());
  if (size() == 1) {
    copy_alone(in, out, bytes);
    return;
  }
  // nccl-tests size of an all-gather: the whole gathered array.
  const int64_t index = begin(CollectiveOp::AllGather, static_cast<double>(size() * bytes), name);
  if (direct(*comm_, in, out)) {
    comm_->all_gather(in.raw(), out.raw(), count, in.dtype());
  } else {
    std::vector<char> host_in(static_cast<size_t>(bytes)), host_out(static_cast<size_t>(size() * bytes));
    backend_->download(host_in.data(), in, bytes);
    comm_->all_gather(host_in.data(), host_out.data(), count, in.dtype());
    backend_->upload(out, host_out.data(), size() * bytes);
  }
  end(index);
}

void TracedComm::reduce_scatter(const Tensor& in, const Tensor& out, int64_t count, const std::string& name)
{
  const int64_t bytes = count * dtype_bytes(in.dtype());
  if (size() == 1) {
    copy_alone(in, out, bytes);
    return;
  }
  // nccl-tests size of a reduce-scatter: the whole input array.
  const int64_t index = begin(CollectiveOp::ReduceScatter, static_cast<double>(size() * bytes), name);
  if (direct(*comm_, in, out)) {
    comm_->reduce_scatter(in.raw(), out.raw(), count, in.dtype());
  } else {
    std::vector<char> host_in(static_cast<size_t>(size() * bytes)), host_out(static_cast<size_t>(bytes));
    backend_->download(host_in.data(), in, size() * bytes);
    comm_->reduce_scatter(host_in.data(), host_out.data(), count, in.dtype());
    backend_->upload(out, host_out.data(), bytes);
  }
  end(index);
}

void TracedComm::all_to_all_v(const Tensor& in, const std::vector<int64_t>& send_rows, const Tensor& out,
                              const std::vector<int64_t>& recv_rows, int64_t row_elements, double trace_bytes,
                              const std::string& name)
{
  const int64_t row_bytes = row_elements * dtype_bytes(in.dtype());
  std::vector<int64_t> send_bytes, recv_bytes;
  int64_t send_total = 0, recv_total = 0;
  for (const int64_t r : send_rows) {
    send_bytes.push_back(r * row_bytes);
    send_total += r * row_bytes;
  }
  for (const int64_t r : recv_rows) {
    recv_bytes.push_back(r * row_bytes);
    recv_total += r * row_bytes;
  }
  if (size() == 1) {
    copy_alone(in, out, send_total);
    return;
  }
  const int64_t index = begin(CollectiveOp::AllToAll, trace_bytes, name);
  if (direct(*comm_, in, out)) {
    comm_->all_to_all_v(in.raw(), send_bytes, out.raw(), recv_bytes);
  } else {
    std::vector<char> host_in(static_cast<size_t>(send_total)), host_out(static_cast<size_t>(recv_total));
    backend_->download(host_in.data(), in, send_total);
    comm_->all_to_all_v(host_in.data(), send_bytes, host_out.data(), recv_bytes);
    backend_->upload(out, host_out.data(), recv_total);
  }
  end(index);
}

std::vector<int64_t> TracedComm::exchange_counts(const std::vector<int64_t>& send, int64_t per_peer)
{
  if (size() == 1)
    return send;
  const auto bytes = static_cast<int64_t>(per_peer * sizeof(int64_t));
  std::vector<int64_t> received(send.size(), 0);
  const std::vector<int64_t> sizes(static_cast<size_t>(size()), bytes);
  // Host memory, through the communicator's point-to-point default (never the device copies).
  comm_->Communicator::all_to_all_v(send.data(), sizes, received.data(), sizes);
  return received;
}

} // namespace gputwin::engine
