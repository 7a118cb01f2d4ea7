// The NCCL communicator: the ncclUniqueId, creating the world communicator and splitting groups from it, and
// the collectives (point-to-point messages are in nccl_messages.cpp).
#include "cuda/nccl_communicator_impl.hpp"

#include <algorithm>
#include <cstring>
#include <exception>

namespace gputwin::engine {

NcclUniqueIdBytes nccl_unique_id()
{
  ncclUniqueId id;
  NCCL_CHECK(ncclGetUniqueId(&id));
  NcclUniqueIdBytes bytes{};
  std::memcpy(bytes.data(), &id, sizeof id);
  return bytes;
}

std::string nccl_version()
{
  int code = 0;
  NCCL_CHECK(ncclGetVersion(&code));
  return "NCCL " + std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

NcclCommunicator::NcclCommunicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl))
{
  impl_->family->push_back(impl_.get());
}

NcclCommunicator::~NcclCommunicator()
{
  Impl& s = *impl_;
  std::erase(*s.family, &s);
  if (s.comm != nullptr) {
    // While an exception unwinds (this rank failed) or after a failure: abort, the peers' waits fail.
    if (std::uncaught_exceptions() > 0) {
      s.abort_comm();
    } else {
      try {
        NCCL_CHECK_STARTED(ncclCommFinalize(s.comm));
        s.wait("ncclCommFinalize", true);
        NCCL_CHECK(ncclCommDestroy(s.comm));
        s.comm = nullptr;
      } catch (...) {
        s.abort_comm();
      }
    }
  }
  for (const Impl::PendingSend& p : s.pending)
    quietly([&] { CUDA_CHECK(cudaFree(p.buffer)); });
  for (char* buffer : s.posted)
    quietly([&] { CUDA_CHECK(cudaFree(buffer)); });
  quietly([&] { CUDA_CHECK(cudaFree(s.barrier_value)); });
  quietly([&] { CUDA_CHECK(cudaFree(s.received_header)); });
  if (s.stream != nullptr)
    quietly([&] { CUDA_CHECK(cudaStreamDestroy(s.stream)); });
}

namespace {
// The stream and small buffers of a new communicator on `device`.
void prepare(NcclCommunicator::Impl& s)
{
  CUDA_CHECK(cudaSetDevice(s.device));
  CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&s.barrier_value), sizeof(float)));
  CUDA_CHECK(cudaMemset(s.barrier_value, 0, sizeof(float)));
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&s.received_header), sizeof(MessageHeader)));
}
} // namespace

std::unique_ptr<NcclCommunicator> NcclCommunicator::create_world(const NcclUniqueIdBytes& id, int world_rank,
                                                                 int world_size, int device,
                                                                 std::chrono::milliseconds timeout, BufferOps* producer)
{
  auto impl = std::make_unique<Impl>();
  impl->device = device;
  impl->rank = world_rank;
  impl->size = world_size;
  for (int r = 0; r < world_size; ++r)
    impl->world_ranks.push_back(r);
  impl->timeout = timeout;
  impl->producer = producer;
  impl->family = std::make_shared<std::vector<Impl*>>();
  Impl& s = *impl;
  std::unique_ptr<NcclCommunicator> result(new NcclCommunicator(std::move(impl)));
  try {
    prepare(s);
    ncclUniqueId unique{};
    std::memcpy(&unique, id.data(), sizeof unique);
    ncclConfig_t config = non_blocking_config();
    NCCL_CHECK_STARTED(ncclCommInitRankConfig(&s.comm, world_size, unique, world_rank, &config));
  } catch (const std::exception& e) {
    s.fail("ncclCommInitRankConfig", e.what());
  }
  s.guarded("ncclCommInitRankConfig", [&] { s.wait("ncclCommInitRankConfig", false); });
  return result;
}

std::unique_ptr<NcclCommunicator> NcclCommunicator::split(int color, const std::vector<int>& members)
{
  Impl& s = *impl_;
  int key = 0;
  if (color >= 0) {
    const auto me = std::find(members.begin(), members.end(), s.world_ranks[static_cast<size_t>(s.rank)]);
    if (me == members.end())
      throw std::logic_error("NcclCommunicator::split: this rank is not among the members of color " +
                             std::to_string(color));
    key = static_cast<int>(me - members.begin());
  }
  s.flush_family();
  auto impl = std::make_unique<Impl>();
  impl->device = s.device;
  impl->rank = key;
  impl->size = static_cast<int>(members.size());
  impl->world_ranks = members;
  impl->timeout = s.timeout;
  impl->producer = s.producer;
  impl->family = s.family;
  ncclComm_t child = nullptr;
  s.guarded("ncclCommSplit", [&] {
    ncclConfig_t config = non_blocking_config();
    NCCL_CHECK_STARTED(ncclCommSplit(s.comm, color >= 0 ? color : NCCL_SPLIT_NOCOLOR, key, &child, &config));
    s.wait("ncclCommSplit", false); // the parent is busy until the split is done
  });
  if (color < 0)
    return nullptr;
  impl->comm = child;
  Impl& c = *impl;
  std::unique_ptr<NcclCommunicator> result(new NcclCommunicator(std::move(impl)));
  c.guarded("ncclCommSplit", [&] {
    prepare(c);
    c.wait("ncclCommSplit", false);
  });
  return result;
}

int NcclCommunicator::rank() const
{
  return impl_->rank;
}
int NcclCommunicator::size() const
{
  return impl_->size;
}
const std::vector<int>& NcclCommunicator::world_ranks() const
{
  return impl_->world_ranks;
}

void NcclCommunicator::all_reduce(void* data, int64_t count, DType dtype, ReduceOp op)
{
  Impl& s = *impl_;
  const ncclDataType_t type = nccl_type(dtype);
  s.collective("ncclAllReduce", [&] {
    NCCL_CHECK_STARTED(ncclAllReduce(data, data, static_cast<size_t>(count), type,
                                     op == ReduceOp::Sum ? ncclSum : ncclMax, s.comm, s.stream));
  });
}

void NcclCommunicator::all_gather(const void* in, void* out, int64_t count, DType dtype)
{
  Impl& s = *impl_;
  const ncclDataType_t type = nccl_type(dtype);
  s.collective("ncclAllGather",
               [&] { NCCL_CHECK_STARTED(ncclAllGather(in, out, static_cast<size_t>(count), type, s.comm, s.stream)); });
}

void NcclCommunicator::reduce_scatter(const void* in, void* out, int64_t count, DType dtype)
{
  Impl& s = *impl_;
  const ncclDataType_t type = nccl_type(dtype);
  s.collective("ncclReduceScatter", [&] {
    NCCL_CHECK_STARTED(ncclReduceScatter(in, out, static_cast<size_t>(count), type, ncclSum, s.comm, s.stream));
  });
}

void NcclCommunicator::barrier()
{
  Impl& s = *impl_;
  s.collective("ncclAllReduce (barrier)", [&] {
    NCCL_CHECK_STARTED(ncclAllReduce(s.barrier_value, s.barrier_value, 1, ncclFloat32, ncclSum, s.comm, s.stream));
  });
}

} // namespace gputwin::engine
