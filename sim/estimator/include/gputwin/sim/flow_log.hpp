#pragma once
// A record of every flow an executor put on the network: which GPUs it joined, the bytes it carried and when
// its transfer ran. Filled by the flow runner (sim/executor/flow_runner.hpp) and the program executor (TP
// collectives timed alone); read by the link report (link_report.hpp). Plain C++.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gputwin::sim {

struct FlowRecord {
  int src_gpu = 0;
  int dst_gpu = 0;
  double bytes = 0;   // the flow's bytes on the wire (Flow::bytes)
  double start_s = 0; // its transfer began (after its route's latency), simulated seconds
  double end_s = 0;   // its last byte arrived
  int64_t tag = -1;   // who ran it: the program executor's flow_tag(program, op); -1 when untagged
};

struct FlowLog {
  std::vector<FlowRecord> flows; // in the order the transfers started (apart from flows timed in closed form)
};

// The tag of the flows of op `op` of program `program` (program_executor.cpp), and back.
inline int64_t flow_tag(size_t program, size_t op)
{
  return static_cast<int64_t>((static_cast<uint64_t>(program) << 32) | static_cast<uint64_t>(op));
}
inline size_t flow_tag_program(int64_t tag)
{
  return static_cast<size_t>(static_cast<uint64_t>(tag) >> 32);
}
inline size_t flow_tag_op(int64_t tag)
{
  return static_cast<size_t>(static_cast<uint64_t>(tag) & 0xffffffffu);
}

} // namespace gputwin::sim
