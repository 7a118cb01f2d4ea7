#pragma once
// A communicator of one trace group whose every collective is recorded as a traces::Op with the group's
// index and the next sequence number, so the same collective matches across its members in the trace.
// A group of one member is the identity: nothing moves and nothing is recorded.
// Tensors go to the communicator as they are where it reaches their memory (host memory; device memory for an
// in-process communicator made with the backend's BufferOps); otherwise device tensors are staged through host
// memory: download, exchange, upload (the recorded duration then includes the staging).

#include "gputwin/engine/backend/backend.hpp"
#include "gputwin/engine/comm/communicator.hpp"
#include "gputwin/engine/core/tensor.hpp"
#include "gputwin/engine/trace/tracer.hpp"

#include <memory>
#include <string>

namespace gputwin::engine {

class TracedComm {
public:
  TracedComm() = default;
  // `backend` copies the tensors' bytes (it must outlive this communicator).
  TracedComm(std::unique_ptr<Communicator> comm, Tracer& tracer, int32_t group, TraceStream stream, Backend& backend)
      : comm_(std::move(comm)), tracer_(&tracer), backend_(&backend), group_(group), stream_(stream)
  {
  }

  bool valid() const { return comm_ != nullptr; }
  int size() const { return comm_ ? comm_->size() : 1; }
  int rank() const { return comm_ ? comm_->rank() : 0; }

  // In place over the first `count` elements of `t` (f32 or bf16).
  void all_reduce(const Tensor& t, int64_t count, ReduceOp op, const std::string& name);
  // out (size x count) from every member's first `count` elements of `in`.
  void all_gather(const Tensor& in, const Tensor& out, int64_t count, const std::string& name);
  // out (count) = the sum of every member's block `rank` of `in` (size x count).
  void reduce_scatter(const Tensor& in, const Tensor& out, int64_t count, const std::string& name);
  // All-to-all(-v) of rows of `row_elements` elements (mixture-of-experts dispatch and combine): send_rows[j]
  // rows of `in` (in member order) to member j, recv_rows[j] rows from member j into `out`. Recorded as an
  // AllToAll of `trace_bytes` (the vocabulary's size of the op, models/op_vocabulary.hpp).
  void all_to_all_v(const Tensor& in, const std::vector<int64_t>& send_rows, const Tensor& out,
                    const std::vector<int64_t>& recv_rows, int64_t row_elements, double trace_bytes,
                    const std::string& name);
  // The token counts before a dispatch: member j gets this member's send[j x per_peer, (j + 1) x per_peer);
  // returns the size x per_peer counts received, member by member. Host metadata over the point-to-point
  // messages, not an op of the trace (the workload generator has none: Megatron's count exchange is tiny).
  std::vector<int64_t> exchange_counts(const std::vector<int64_t>& send, int64_t per_peer);

private:
  void copy_alone(const Tensor& in, const Tensor& out, int64_t bytes);
  // Around every collective: the communication stream waits for the compute issued so far, the op is
  // recorded on it; afterwards the compute stream waits for the communication.
  int64_t begin(CollectiveOp op, double bytes, const std::string& name);
  void end(int64_t index);

  std::unique_ptr<Communicator> comm_;
  Tracer* tracer_ = nullptr;
  Backend* backend_ = nullptr;
  int32_t group_ = -1;
  TraceStream stream_ = TraceStream::TensorParallel;
};

} // namespace gputwin::engine
