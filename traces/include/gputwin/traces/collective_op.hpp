#pragma once
// The collective operations gputwin models, and the nccl-tests definitions of their bus bandwidth: one
// function shared by the simulator's reports and the engine's benchmarks.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gputwin {

enum class CollectiveOp { AllReduce, AllGather, ReduceScatter, Broadcast, SendRecv, AllToAll };

std::string to_string(CollectiveOp op); // "all-reduce", "all-gather", ...
std::optional<CollectiveOp> parse_collective_op(const std::string& text);
std::string collective_op_names(); // "all-reduce|all-gather|..."

// busbw / algbw for `ranks` participants, as nccl-tests defines it (doc/PERFORMANCE.md): 2(n-1)/n for
// all-reduce; (n-1)/n for all-gather, reduce-scatter and all-to-all (the size is the whole gathered array);
// 1 for broadcast and send/recv. REQUIRES: ranks >= 1.
double bus_bandwidth_factor(CollectiveOp op, int ranks);

// An all-to-all(-v) whose traffic matrix has rank one (a MoE token exchange, models/token_exchange.hpp): rank i sends
// rank j bytes / n x rank[j] (the receiver's load: a dispatch) or bytes / n x rank[i] (at_sender: the sender's, a
// combine). Empty `rank`: an even all-to-all, every pair bytes / n.
struct AllToAllWeights {
  std::vector<double> rank;
  bool at_sender = false;
};

// Bytes rank i sends rank j (i == j included: the share a rank keeps) in an all-to-all of `bytes` (one rank's send
// buffer, the nccl-tests size) over n ranks. The one rule the simulator's flows and the Chakra export both use.
// REQUIRES: i, j < n; weights.rank empty or of size n.
double all_to_all_pair_bytes(double bytes, const AllToAllWeights& weights, size_t i, size_t j, size_t n);

} // namespace gputwin
