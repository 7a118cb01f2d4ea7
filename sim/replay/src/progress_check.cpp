#include "gputwin/sim/progress_check.hpp"

#include "gputwin/traces/trace_io.hpp"

#include <map>
#include <set>
#include <tuple>

namespace gputwin::sim {

void check_progress(const traces::OpGraph& graph)
{
  // Each stream is a queue; an op at the head of its queue may run once its deps are done, its collective's
  // members are all at the head with it, or its message has been sent. Repeat until nothing moves.
  struct Stream {
    size_t rank_index;
    std::vector<size_t> ops;
    size_t next = 0;
  };
  std::vector<Stream> streams;
  std::vector<std::vector<bool>> done;
  for (size_t r = 0; r < graph.ranks.size(); ++r) {
    std::map<int32_t, Stream> by_stream;
    const auto& ops = graph.ranks[r].ops;
    for (size_t i = 0; i < ops.size(); ++i) {
      by_stream[ops[i].stream].rank_index = r;
      by_stream[ops[i].stream].ops.push_back(i);
    }
    for (auto& [id, s] : by_stream)
      streams.push_back(std::move(s));
    done.emplace_back(ops.size(), false);
  }
  // Op ids are increasing but need not be dense: index them.
  std::vector<std::map<int64_t, size_t>> index(graph.ranks.size());
  for (size_t r = 0; r < graph.ranks.size(); ++r)
    for (size_t i = 0; i < graph.ranks[r].ops.size(); ++i)
      index[r][graph.ranks[r].ops[i].id] = i;

  std::set<std::tuple<int32_t, int32_t, int64_t>> sent;            // (src, dst, sequence)
  std::map<std::pair<int32_t, int64_t>, std::set<size_t>> arrived; // collective -> ranks at its head
  size_t remaining = 0;
  for (const auto& s : streams)
    remaining += s.ops.size();

  bool moved = true;
  while (remaining > 0 && moved) {
    moved = false;
    for (Stream& s : streams) {
      while (s.next < s.ops.size()) {
        const size_t r = s.rank_index;
        const traces::Op& op = graph.ranks[r].ops[s.ops[s.next]];
        bool ready = true;
        for (const int64_t d : op.deps)
          ready = ready && done[r][index[r].at(d)];
        if (!ready)
          break;
        if (op.kind == traces::OpKind::Recv && !sent.count({op.peer, graph.ranks[r].rank, op.sequence}))
          break;
        if (op.kind == traces::OpKind::Collective) {
          auto& at_head = arrived[{op.group, op.sequence}];
          at_head.insert(r);
          if (at_head.size() < graph.groups[static_cast<size_t>(op.group)].ranks.size())
            break;
        }
        if (op.kind == traces::OpKind::Send)
          sent.insert({graph.ranks[r].rank, op.peer, op.sequence});
        done[r][s.ops[s.next]] = true;
        ++s.next;
        --remaining;
        moved = true;
      }
    }
  }
  if (remaining == 0)
    return;
  for (const Stream& s : streams) {
    if (s.next == s.ops.size())
      continue;
    const traces::RankProgram& rank = graph.ranks[s.rank_index];
    const traces::Op& op = rank.ops[s.ops[s.next]];
    std::string what = "its dependencies";
    if (op.kind == traces::OpKind::Recv)
      what = "the send from rank " + std::to_string(op.peer) + " with sequence " + std::to_string(op.sequence);
    else if (op.kind == traces::OpKind::Collective)
      what = "the other members of group " + std::to_string(op.group) + " at sequence " + std::to_string(op.sequence);
    throw traces::TraceError("trace cannot complete: rank " + std::to_string(rank.rank) + " op " +
                             std::to_string(op.id) + " '" + op.name + "' (stream " + std::to_string(op.stream) +
                             ") waits for " + what + " forever (expected an order every rank can follow)");
  }
}

} // namespace gputwin::sim
