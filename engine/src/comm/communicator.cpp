// The communicator's all-to-all(-v) through its point-to-point messages (host memory).
#include "gputwin/engine/comm/communicator.hpp"

#include <cstring>

namespace gputwin::engine {

void Communicator::all_to_all_v(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                                const std::vector<int64_t>& recv_bytes)
{
  const int n = size();
  if (static_cast<int>(send_bytes.size()) != n || static_cast<int>(recv_bytes.size()) != n)
    throw CommError("all_to_all_v: expected " + std::to_string(n) + " send and receive sizes");
  std::vector<int64_t> send_offset(static_cast<size_t>(n), 0), recv_offset(static_cast<size_t>(n), 0);
  for (int j = 1; j < n; ++j) {
    send_offset[static_cast<size_t>(j)] = send_offset[static_cast<size_t>(j - 1)] + send_bytes[static_cast<size_t>(j - 1)];
    recv_offset[static_cast<size_t>(j)] = recv_offset[static_cast<size_t>(j - 1)] + recv_bytes[static_cast<size_t>(j - 1)];
  }
  const char* src = static_cast<const char*>(in);
  char* dst = static_cast<char*>(out);
  for (int j = 0; j < n; ++j)
    if (j != rank())
      send(src + send_offset[static_cast<size_t>(j)], send_bytes[static_cast<size_t>(j)], j, all_to_all_tag, 0);
  const auto me = static_cast<size_t>(rank());
  if (send_bytes[me] != recv_bytes[me])
    throw CommError("all_to_all_v: this member sends itself " + std::to_string(send_bytes[me]) + " bytes but expects " +
                    std::to_string(recv_bytes[me]));
  if (send_bytes[me] > 0)
    std::memcpy(dst + recv_offset[me], src + send_offset[me], static_cast<size_t>(send_bytes[me]));
  for (int j = 0; j < n; ++j)
    if (j != rank())
      recv(dst + recv_offset[static_cast<size_t>(j)], recv_bytes[static_cast<size_t>(j)], j, all_to_all_tag);
}

} // namespace gputwin::engine
