#pragma once
// The collective operations gputwin models, and the nccl-tests definitions of their bus bandwidth: one
// function shared by the simulator's reports and the engine's benchmarks.

#include <optional>
#include <string>

namespace gputwin {

enum class CollectiveOp { AllReduce, AllGather, ReduceScatter, Broadcast, SendRecv, AllToAll };

std::string to_string(CollectiveOp op); // "all-reduce", "all-gather", ...
std::optional<CollectiveOp> parse_collective_op(const std::string& text);
std::string collective_op_names(); // "all-reduce|all-gather|..."

// busbw / algbw for `ranks` participants, as nccl-tests defines it (doc/PERFORMANCE.md): 2(n-1)/n for
// all-reduce; (n-1)/n for all-gather, reduce-scatter and all-to-all (the size is the whole gathered array);
// 1 for broadcast and send/recv. REQUIRES: ranks >= 1.
double bus_bandwidth_factor(CollectiveOp op, int ranks);

} // namespace gputwin
