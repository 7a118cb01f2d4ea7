#include "gputwin/common/json_writer.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <unordered_set>

namespace gputwin::traces {

namespace {

std::string op_ref(int32_t rank, int64_t id)
{
  return "rank " + std::to_string(rank) + " op " + std::to_string(id);
}

[[noreturn]] void fail_op(int32_t rank, const Op& op, const std::string& field, const std::string& message)
{
  throw TraceError(op_ref(rank, op.id) + ": field '" + field + "': " + message);
}

std::string bytes_text(double bytes)
{
  return json_number(bytes) + " bytes";
}

struct Located {
  int32_t rank;
  const Op* op;
};

void check_op_fields(int32_t rank, const Op& op, const OpGraph& graph, const std::map<int32_t, size_t>& programs)
{
  if (!std::isfinite(op.flops) || op.flops < 0)
    fail_op(rank, op, "flops", "expected a finite number >= 0");
  if (!std::isfinite(op.bytes) || op.bytes < 0)
    fail_op(rank, op, "bytes", "expected a finite number >= 0");
  if (op.layer < -1 || op.micro_batch < -1 || op.chunk < 0 || op.stream < 0)
    fail_op(rank, op, "layer", "expected layer and micro_batch >= -1, chunk and stream >= 0");
  if (op.start_ns < -1 || op.duration_ns < -1)
    fail_op(rank, op, "start_ns", "expected start_ns and duration_ns >= 0, or -1 when not measured");
  if (op.kind == OpKind::Collective) {
    if (op.group < 0 || static_cast<size_t>(op.group) >= graph.groups.size())
      fail_op(rank, op, "group",
              "expected a group index in [0, " + std::to_string(graph.groups.size()) + "), got " +
                  std::to_string(op.group));
    const std::vector<int32_t>& members = graph.groups[static_cast<size_t>(op.group)].ranks;
    if (std::find(members.begin(), members.end(), rank) == members.end())
      fail_op(rank, op, "group",
              "rank " + std::to_string(rank) + " is not a member of group " + std::to_string(op.group) +
                  " (expected a group that contains the rank)");
  }
  if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
    if (op.peer == rank || programs.count(op.peer) == 0)
      fail_op(rank, op, "peer", "expected another rank that has a program, got " + std::to_string(op.peer));
  }
  if (op.is_communication() && op.sequence < 0)
    fail_op(rank, op, "sequence", "expected a sequence number >= 0");
}

void check_collectives(const OpGraph& graph, const std::vector<Located>& collectives)
{
  // (group, sequence) -> the first op seen, and the members that have it.
  std::map<std::pair<int32_t, int64_t>, std::pair<Located, std::set<int32_t>>> seen;
  for (const Located& c : collectives) {
    const auto key = std::make_pair(c.op->group, c.op->sequence);
    auto it = seen.find(key);
    if (it == seen.end()) {
      seen.emplace(key, std::make_pair(c, std::set<int32_t>{c.rank}));
      continue;
    }
    const Located& first = it->second.first;
    const std::string what =
        "collective sequence " + std::to_string(c.op->sequence) + " of group " + std::to_string(c.op->group) + " ";
    if (!it->second.second.insert(c.rank).second)
      fail_op(c.rank, *c.op, "sequence", what + "appears twice on this rank (expected one op per sequence number)");
    if (first.op->collective != c.op->collective)
      fail_op(c.rank, *c.op, "collective",
              what + "is " + to_string(first.op->collective) + " on " + op_ref(first.rank, first.op->id) + " but " +
                  to_string(c.op->collective) + " here (expected the same collective on every member)");
    if (first.op->bytes != c.op->bytes)
      fail_op(c.rank, *c.op, "bytes",
              what + "has " + bytes_text(first.op->bytes) + " on " + op_ref(first.rank, first.op->id) + " but " +
                  bytes_text(c.op->bytes) + " here (expected the same size on every member)");
  }
  for (const auto& [key, entry] : seen) {
    const std::vector<int32_t>& members = graph.groups[static_cast<size_t>(key.first)].ranks;
    for (const int32_t member : members)
      if (entry.second.count(member) == 0) {
        const Located& first = entry.first;
        fail_op(first.rank, *first.op, "sequence",
                "collective sequence " + std::to_string(key.second) + " of group " + std::to_string(key.first) + " (" +
                    graph.groups[static_cast<size_t>(key.first)].kind + ") has no matching op on member rank " +
                    std::to_string(member) + " (expected it on every member)");
      }
  }
}

void check_point_to_point(const std::vector<Located>& sends, const std::vector<Located>& recvs)
{
  // (source, destination, sequence) -> op.
  using Key = std::tuple<int32_t, int32_t, int64_t>;
  std::map<Key, Located> send_of, recv_of;
  for (const Located& s : sends)
    if (!send_of.emplace(Key{s.rank, s.op->peer, s.op->sequence}, s).second)
      fail_op(s.rank, *s.op, "sequence",
              "a second send to rank " + std::to_string(s.op->peer) + " with sequence " +
                  std::to_string(s.op->sequence) + " (expected unique sequence numbers)");
  for (const Located& r : recvs)
    if (!recv_of.emplace(Key{r.op->peer, r.rank, r.op->sequence}, r).second)
      fail_op(r.rank, *r.op, "sequence",
              "a second recv from rank " + std::to_string(r.op->peer) + " with sequence " +
                  std::to_string(r.op->sequence) + " (expected unique sequence numbers)");
  for (const auto& [key, s] : send_of) {
    const auto it = recv_of.find(key);
    if (it == recv_of.end())
      fail_op(s.rank, *s.op, "sequence",
              "send to rank " + std::to_string(s.op->peer) + " with sequence " + std::to_string(s.op->sequence) +
                  " has no matching recv on that rank (expected a recv with peer " + std::to_string(s.rank) + ")");
    if (it->second.op->bytes != s.op->bytes)
      fail_op(it->second.rank, *it->second.op, "bytes",
              "recv of " + bytes_text(it->second.op->bytes) + " matches " + op_ref(s.rank, s.op->id) + ", a send of " +
                  bytes_text(s.op->bytes) + " (expected equal sizes)");
  }
  for (const auto& [key, r] : recv_of)
    if (send_of.count(key) == 0)
      fail_op(r.rank, *r.op, "sequence",
              "recv from rank " + std::to_string(r.op->peer) + " with sequence " + std::to_string(r.op->sequence) +
                  " has no matching send on that rank (expected a send with peer " + std::to_string(r.rank) + ")");
}

} // namespace

void validate_op_graph(const OpGraph& graph)
{
  if (graph.format_version != op_graph_format_version)
    throw TraceError("field 'format_version': expected " + std::to_string(op_graph_format_version) + ", got " +
                     std::to_string(graph.format_version));
  if (graph.ranks.empty())
    throw TraceError("field 'ranks': no rank programs (expected at least one rank with ops)");
  std::map<int32_t, size_t> programs;
  for (size_t i = 0; i < graph.ranks.size(); ++i) {
    if (!programs.emplace(graph.ranks[i].rank, i).second)
      throw TraceError("rank program at index " + std::to_string(i) + ": field 'rank': rank " +
                       std::to_string(graph.ranks[i].rank) + " appears twice (expected one program per rank)");
    // A rank that did nothing would replay in 0 s (a -100% error beside its measured time): not a capture.
    if (graph.ranks[i].ops.empty())
      throw TraceError("rank program at index " + std::to_string(i) + ": field 'ops': rank " +
                       std::to_string(graph.ranks[i].rank) + " has no ops (expected at least one op per rank)");
  }
  for (size_t g = 0; g < graph.groups.size(); ++g) {
    const std::vector<int32_t>& members = graph.groups[g].ranks;
    if (members.empty())
      throw TraceError("group " + std::to_string(g) + ": field 'ranks': expected at least one rank");
    std::set<int32_t> unique;
    for (const int32_t r : members) {
      if (!unique.insert(r).second)
        throw TraceError("group " + std::to_string(g) + ": field 'ranks': rank " + std::to_string(r) +
                         " listed twice (expected distinct ranks)");
      if (programs.count(r) == 0)
        throw TraceError("group " + std::to_string(g) + ": field 'ranks': rank " + std::to_string(r) +
                         " has no program (expected ranks of this trace)");
    }
  }

  std::vector<Located> collectives, sends, recvs;
  for (const RankProgram& program : graph.ranks) {
    std::unordered_set<int64_t> earlier;
    int64_t previous = -1;
    for (const Op& op : program.ops) {
      if (op.id <= previous)
        fail_op(program.rank, op, "id",
                "expected ids increasing in issue order (previous op is " + std::to_string(previous) + ")");
      for (const int64_t dep : op.deps)
        if (earlier.count(dep) == 0)
          fail_op(program.rank, op, "deps",
                  "expected ids of earlier ops of rank " + std::to_string(program.rank) + ", got " +
                      std::to_string(dep) + (dep >= op.id ? " (not earlier)" : " (no such op)"));
      check_op_fields(program.rank, op, graph, programs);
      if (op.kind == OpKind::Collective)
        collectives.push_back({program.rank, &op});
      else if (op.kind == OpKind::Send)
        sends.push_back({program.rank, &op});
      else if (op.kind == OpKind::Recv)
        recvs.push_back({program.rank, &op});
      earlier.insert(op.id);
      previous = op.id;
    }
  }
  check_collectives(graph, collectives);
  check_point_to_point(sends, recvs);
}

} // namespace gputwin::traces
