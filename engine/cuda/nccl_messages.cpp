// The NCCL communicator's point-to-point messages: buffered sends posted with the next receive (or before a
// collective), each with a header carrying its tag, size and sequence number (nccl_communicator.hpp).
#include "cuda/nccl_communicator_impl.hpp"

namespace gputwin::engine {

void NcclCommunicator::send(const void* data, int64_t bytes, int peer, int64_t tag, int64_t sequence)
{
  Impl& s = *impl_;
  if (peer < 0 || peer >= s.size)
    throw CommError("NCCL send " + s.where() + ": peer " + std::to_string(peer) + " is not a member (expected 0.." +
                    std::to_string(s.size - 1) + ")");
  s.guarded("ncclSend", [&] {
    s.publish_producer(); // `data` holds its value before it is copied
    Impl::PendingSend p;
    p.bytes = bytes;
    p.peer = peer;
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p.buffer), payload_offset + static_cast<size_t>(bytes)));
    s.pending.push_back(p);
    const MessageHeader header{header_magic, tag, bytes, sequence};
    CUDA_CHECK(cudaMemcpyAsync(p.buffer, &header, sizeof header, cudaMemcpyHostToDevice, s.stream));
    CUDA_CHECK(cudaMemcpyAsync(p.buffer + payload_offset, data, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice,
                               s.stream));
    // The caller may free `data` once send returns (stream-ordered on the backend's stream, which knows nothing
    // of this one): the copy must be done.
    s.wait("ncclSend (copy to the send buffer)", true);
  });
}

int64_t NcclCommunicator::recv(void* data, int64_t bytes, int peer, int64_t tag)
{
  Impl& s = *impl_;
  if (peer < 0 || peer >= s.size)
    throw CommError("NCCL recv " + s.where() + ": peer " + std::to_string(peer) + " is not a member (expected 0.." +
                    std::to_string(s.size - 1) + ")");
  s.flush_family(&s); // another communicator's buffered sends go first; this one's join the receive's group
  MessageHeader header;
  s.guarded("ncclRecv", [&] {
    s.publish_producer(); // `data` was allocated and zero-filled on the backend's stream: done before NCCL writes
    NCCL_CHECK_STARTED(ncclGroupStart());
    s.post_pending();
    NCCL_CHECK_STARTED(ncclRecv(s.received_header, sizeof(MessageHeader), ncclInt8, peer, s.comm, s.stream));
    NCCL_CHECK_STARTED(ncclRecv(data, static_cast<size_t>(bytes), ncclInt8, peer, s.comm, s.stream));
    NCCL_CHECK_STARTED(ncclGroupEnd());
    s.wait("ncclRecv", true);
    CUDA_CHECK(cudaMemcpy(&header, s.received_header, sizeof header, cudaMemcpyDeviceToHost));
  });
  const int64_t index = s.received_count[peer]++;
  if (header.magic != header_magic || header.tag != tag || header.bytes != bytes)
    s.fail("ncclRecv", "message " + std::to_string(index) + " from member " + std::to_string(peer) + " has tag " +
                           std::to_string(header.tag) + " and " + std::to_string(header.bytes) +
                           " bytes; expected tag " + std::to_string(tag) + " and " + std::to_string(bytes) +
                           " bytes (the ranks disagree on the pipeline schedule)");
  return header.sequence;
}

} // namespace gputwin::engine
