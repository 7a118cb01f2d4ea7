// The Chakra ET writer's round trip (traces/chakra/chakra_writer.hpp; the mapping in sim/README.md "Chakra export"):
// `simulate --chakra DIR` writes, `replay DIR/workload.0.et` reads back. The input is an op graph in the trace format
// (traces/FORMAT.md: parse_op_graph, TraceError accepted), the form of what simulate exports. write_chakra_traces
// writes it as DIR/workload.<rank>.et and DIR/workload.comm_groups.json, or refuses an op Chakra cannot express, or
// a value the reader would not read back, with a one-line TraceError "chakra export: ..."; anything else it writes,
// read_chakra_et must read back without an error, with, rank by rank:
//   - one op per op in the same order; a ring exchange (a send/recv collective) as a send to the next rank of its
//     group, then a receive from the previous one; the same ids when the rank has no ring exchange (the receive's
//     fresh id makes the reader renumber otherwise);
//   - the same name, stream, phase, layer, micro-batch and chunk (the gputwin.* attributes); memcpy as compute;
//   - compute: FLOPs and bytes rounded to whole numbers, the duration the export was given in whole microseconds
//     (-1, none, at 0 us); collectives: the same collective on a group of the same ranks, whole bytes (an
//     all-gather's per-rank share whole, times the group's size: ASTRA-sim's convention); sends and receives: the
//     same peer, whole bytes; no duration on communication;
//   - as dependencies the op's own plus the previous op of its stream (the stream order made explicit in
//     data_deps), a dependency on a ring exchange being on both its send and its receive;
//   - the graph's metadata; as many nodes and collectives as the export's summary counts;
// and, where every rank issues each group's collectives and each peer's messages in sequence order from 0 and has
// no ring exchange (as simulate's workloads do), the same sequence numbers and an op graph that validates
// (validate_op_graph: every collective on every member, every send with its receive). Any mismatch is a finding.
#include "fuzz_support.hpp"

#include "gputwin/chakra/chakra_reader.hpp"
#include "gputwin/chakra/chakra_writer.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

using gputwin::fuzz::fail;
using gputwin::traces::Op;
using gputwin::traces::OpGraph;
using gputwin::traces::OpKind;
using gputwin::traces::RankProgram;

// The compute durations the export is given: the recorded one where the op has one, else a stand-in for the compute
// model (FLOPs at 1 PFLOP/s plus bytes at 1 TB/s), so that rounding to microseconds and 0 us are both reached.
double export_duration_s(const Op& op)
{
  return op.duration_ns >= 0 ? static_cast<double>(op.duration_ns) * 1e-9 : op.flops / 1e15 + op.bytes / 1e12;
}

// A count as the writer rounds it (a whole number, 0 for anything not finite and positive).
double whole(double v)
{
  return v > 0 && std::isfinite(v) ? std::round(v) : 0;
}

bool is_ring_exchange(const Op& op)
{
  return op.kind == OpKind::Collective && op.collective == gputwin::CollectiveOp::SendRecv;
}

// An op as it must read back.
struct ExpectedOp {
  const Op* op = nullptr; // the graph's op it stands for
  OpKind kind = OpKind::Compute;
  int32_t peer = -1; // sends and receives
  double bytes = 0;
  std::set<size_t> deps; // positions in the rank's expected ops
};

// The ops `program` must read back as, in order.
std::vector<ExpectedOp> expected_ops(const OpGraph& graph, const RankProgram& program)
{
  std::vector<ExpectedOp> expected;
  std::map<int64_t, std::vector<size_t>> positions; // op id -> its position(s): two for a ring exchange
  std::map<int32_t, int64_t> last_on_stream;
  for (const Op& op : program.ops) {
    ExpectedOp e;
    e.op = &op;
    e.kind = op.kind == OpKind::Memcpy ? OpKind::Compute : op.kind;
    e.peer = op.peer;
    e.bytes = whole(op.bytes);
    std::vector<int64_t> deps = op.deps;
    if (const auto it = last_on_stream.find(op.stream); it != last_on_stream.end())
      deps.push_back(it->second);
    for (const int64_t d : deps)
      for (const size_t at : positions.at(d))
        e.deps.insert(at);
    last_on_stream[op.stream] = op.id;
    std::vector<size_t>& at = positions[op.id];
    if (is_ring_exchange(op)) {
      const std::vector<int32_t>& ring = graph.groups.at(static_cast<size_t>(op.group)).ranks;
      const size_t i = static_cast<size_t>(std::find(ring.begin(), ring.end(), program.rank) - ring.begin());
      const size_t n = ring.size();
      e.kind = OpKind::Send;
      e.peer = ring[(i + 1) % n];
      at.push_back(expected.size());
      expected.push_back(e);
      e.kind = OpKind::Recv;
      e.peer = ring[(i + n - 1) % n];
      at.push_back(expected.size());
      expected.push_back(e);
      continue;
    }
    if (op.kind == OpKind::Collective && op.collective == gputwin::CollectiveOp::AllGather) {
      const double members = static_cast<double>(graph.groups.at(static_cast<size_t>(op.group)).ranks.size());
      e.bytes = whole(op.bytes / members) * members;
    }
    at.push_back(expected.size());
    expected.push_back(e);
  }
  return expected;
}

// True when every rank issues each group's collectives and each peer's sends and receives in sequence order from 0,
// and no rank has a ring exchange: the reader's sequence numbers (order of issue) are then the graph's.
bool in_sequence_order(const OpGraph& graph)
{
  for (const RankProgram& program : graph.ranks) {
    std::map<int32_t, int64_t> next_collective;
    std::map<std::pair<OpKind, int32_t>, int64_t> next_message;
    for (const Op& op : program.ops) {
      if (is_ring_exchange(op))
        return false;
      if (op.kind == OpKind::Collective && op.sequence != next_collective[op.group]++)
        return false;
      if ((op.kind == OpKind::Send || op.kind == OpKind::Recv) && op.sequence != next_message[{op.kind, op.peer}]++)
        return false;
    }
  }
  return true;
}

void compare_rank(const OpGraph& graph, const RankProgram& written, const OpGraph& read_graph, const RankProgram& read,
                  bool ordered)
{
  const std::vector<ExpectedOp> expected = expected_ops(graph, written);
  const std::string rank = "rank " + std::to_string(written.rank);
  if (read.ops.size() != expected.size())
    fail(rank + ": " + std::to_string(read.ops.size()) + " ops read back, expected " + std::to_string(expected.size()));
  const bool renumbered = std::any_of(written.ops.begin(), written.ops.end(), is_ring_exchange);
  std::map<int64_t, size_t> position_of;
  for (size_t i = 0; i < read.ops.size(); ++i)
    position_of[read.ops[i].id] = i;
  for (size_t i = 0; i < expected.size(); ++i) {
    const ExpectedOp& e = expected[i];
    const Op &x = *e.op, &y = read.ops[i];
    const std::string at =
        rank + " op " + std::to_string(x.id) + " '" + x.name + "' (read back as op " + std::to_string(y.id) + ")";
    if (!renumbered && y.id != x.id)
      fail(at + ": another id");
    if (y.name != x.name)
      fail(at + ": name '" + y.name + "'");
    if (y.kind != e.kind)
      fail(at + ": kind " + gputwin::traces::to_string(y.kind) + ", expected " + gputwin::traces::to_string(e.kind));
    if (y.stream != x.stream || y.phase != x.phase || y.layer != x.layer || y.micro_batch != x.micro_batch ||
        y.chunk != x.chunk)
      fail(at + ": stream, phase, layer, micro-batch or chunk differ (stream " + std::to_string(y.stream) + ", layer " +
           std::to_string(y.layer) + ", micro-batch " + std::to_string(y.micro_batch) + ", chunk " +
           std::to_string(y.chunk) + ")");
    if (y.bytes != e.bytes)
      fail(at + ": " + std::to_string(y.bytes) + " bytes, expected " + std::to_string(e.bytes));
    int64_t duration_ns = -1;
    if (e.kind == OpKind::Compute) {
      if (y.flops != whole(x.flops))
        fail(at + ": " + std::to_string(y.flops) + " FLOPs, expected " + std::to_string(whole(x.flops)));
      const double micros = whole(export_duration_s(x) * 1e6);
      duration_ns = micros > 0 ? static_cast<int64_t>(micros) * 1000 : -1;
    }
    if (y.duration_ns != duration_ns)
      fail(at + ": duration " + std::to_string(y.duration_ns) + " ns, expected " + std::to_string(duration_ns));
    if (e.kind == OpKind::Collective) {
      if (y.collective != x.collective)
        fail(at + ": another collective");
      if (read_graph.groups.at(static_cast<size_t>(y.group)).ranks !=
          graph.groups.at(static_cast<size_t>(x.group)).ranks)
        fail(at + ": a group of other ranks");
    }
    if ((e.kind == OpKind::Send || e.kind == OpKind::Recv) && y.peer != e.peer)
      fail(at + ": peer " + std::to_string(y.peer) + ", expected " + std::to_string(e.peer));
    if (ordered && x.is_communication() && y.sequence != x.sequence)
      fail(at + ": sequence " + std::to_string(y.sequence) + ", expected " + std::to_string(x.sequence));
    std::set<size_t> deps;
    for (const int64_t d : y.deps) {
      const auto it = position_of.find(d);
      if (it == position_of.end())
        fail(at + ": a dependency on no op of the rank");
      deps.insert(it->second);
    }
    if (deps != e.deps)
      fail(at + ": other dependencies than its own and its stream's previous op");
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  namespace chakra = gputwin::chakra;
  using gputwin::traces::TraceError;
  OpGraph graph;
  try {
    graph = gputwin::traces::parse_op_graph(gputwin::fuzz::as_text(data, size), "fuzz.trace.json");
  } catch (const TraceError& e) {
    gputwin::fuzz::check_error_message(e);
    return 0;
  }

  // A fresh directory each time: the reader reads every workload.<rank>.et beside the first.
  const std::filesystem::path dir = gputwin::fuzz::scratch_dir() / "et";
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  chakra::ChakraExportOptions options;
  options.compute_duration_s = export_duration_s;
  chakra::ChakraExportSummary summary;
  try {
    summary = chakra::write_chakra_traces(graph, dir, options);
  } catch (const TraceError& e) {
    if (std::string(e.what()).rfind("chakra export: ", 0) != 0)
      fail(std::string("the export failed other than by refusing what Chakra cannot hold: ") + e.what());
    gputwin::fuzz::check_error_message(e);
    return 0;
  }
  ++gputwin::fuzz::accepted_inputs;

  chakra::ChakraTrace trace;
  try {
    trace = chakra::read_chakra_et(summary.files.front().string());
  } catch (const std::exception& e) {
    fail(std::string("the reader refuses what the writer wrote: ") + e.what());
  }
  if (trace.stats.nodes != summary.nodes || trace.stats.collectives != summary.collectives)
    fail("read back " + std::to_string(trace.stats.nodes) + " nodes and " + std::to_string(trace.stats.collectives) +
         " collectives, written " + std::to_string(summary.nodes) + " and " + std::to_string(summary.collectives));
  if (trace.graph.ranks.size() != graph.ranks.size())
    fail("read back " + std::to_string(trace.graph.ranks.size()) + " rank programs, written " +
         std::to_string(graph.ranks.size()));
  const bool ordered = in_sequence_order(graph);
  for (const RankProgram& written : graph.ranks) {
    const auto read = std::find_if(trace.graph.ranks.begin(), trace.graph.ranks.end(),
                                   [&](const RankProgram& r) { return r.rank == written.rank; });
    if (read == trace.graph.ranks.end())
      fail("rank " + std::to_string(written.rank) + " is not read back");
    compare_rank(graph, written, trace.graph, *read, ordered);
  }
  for (const auto& [key, value] : graph.metadata) {
    const auto it = trace.graph.metadata.find(key);
    if (it == trace.graph.metadata.end() || it->second != value)
      fail("metadata '" + key + "' is not read back as written");
  }
  if (ordered) {
    try {
      gputwin::traces::validate_op_graph(trace.graph);
    } catch (const TraceError& e) {
      fail(std::string("the graph read back does not validate: ") + e.what());
    }
  }
  return 0;
}
