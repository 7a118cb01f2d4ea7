#include "gputwin/traces/collective_op.hpp"

#include <stdexcept>

namespace gputwin {

namespace {
constexpr CollectiveOp all_ops[] = {CollectiveOp::AllReduce, CollectiveOp::AllGather, CollectiveOp::ReduceScatter,
                                    CollectiveOp::Broadcast, CollectiveOp::SendRecv,  CollectiveOp::AllToAll};
}

std::string to_string(CollectiveOp op)
{
  switch (op) {
  case CollectiveOp::AllReduce: return "all-reduce";
  case CollectiveOp::AllGather: return "all-gather";
  case CollectiveOp::ReduceScatter: return "reduce-scatter";
  case CollectiveOp::Broadcast: return "broadcast";
  case CollectiveOp::SendRecv: return "send-recv";
  case CollectiveOp::AllToAll: return "all-to-all";
  }
  return "?";
}

std::optional<CollectiveOp> parse_collective_op(const std::string& text)
{
  for (const CollectiveOp op : all_ops)
    if (to_string(op) == text)
      return op;
  return std::nullopt;
}

std::string collective_op_names()
{
  std::string names;
  for (const CollectiveOp op : all_ops) {
    if (!names.empty())
      names += '|';
    names += to_string(op);
  }
  return names;
}

double bus_bandwidth_factor(CollectiveOp op, int ranks)
{
  if (ranks < 1)
    throw std::invalid_argument("bus_bandwidth_factor: ranks must be >= 1");
  const double n = ranks;
  switch (op) {
  case CollectiveOp::AllReduce: return 2.0 * (n - 1) / n;
  case CollectiveOp::AllGather:
  case CollectiveOp::ReduceScatter:
  case CollectiveOp::AllToAll: return (n - 1) / n;
  case CollectiveOp::Broadcast:
  case CollectiveOp::SendRecv: return 1.0;
  }
  return 1.0;
}

double all_to_all_pair_bytes(double bytes, const AllToAllWeights& weights, size_t i, size_t j, size_t n)
{
  if (i >= n || j >= n || (!weights.rank.empty() && weights.rank.size() != n))
    throw std::invalid_argument("all_to_all_pair_bytes: ranks or weights do not match the group of " +
                                std::to_string(n));
  const double share = bytes / static_cast<double>(n);
  return weights.rank.empty() ? share : share * weights.rank[weights.at_sender ? i : j];
}

} // namespace gputwin
