// Op graph -> Chakra ET (length-delimited protobuf), the mapping of sim/README.md "Chakra export".
#include "gputwin/chakra/chakra_writer.hpp"

#include "et_def.pb.h"
#include "gputwin/common/json_writer.hpp"
#include "gputwin/common/output_file.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <google/protobuf/util/delimited_message_util.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <ostream>
#include <string_view>
#include <system_error>
#include <utility>

namespace gputwin::chakra {

namespace {

using ChakraProtoMsg::AttributeProto;
using ChakraProtoMsg::Node;

void add_bool(Node& node, const char* name, bool value)
{
  AttributeProto* a = node.add_attr();
  a->set_name(name);
  a->set_bool_val(value);
}

void add_int64(Node& node, const char* name, int64_t value)
{
  AttributeProto* a = node.add_attr();
  a->set_name(name);
  a->set_int64_val(value);
}

void add_uint64(Node& node, const char* name, uint64_t value)
{
  AttributeProto* a = node.add_attr();
  a->set_name(name);
  a->set_uint64_val(value);
}

void add_int32(Node& node, const char* name, int32_t value)
{
  AttributeProto* a = node.add_attr();
  a->set_name(name);
  a->set_int32_val(value);
}

void add_string(Node& node, const char* name, const std::string& value)
{
  AttributeProto* a = node.add_attr();
  a->set_name(name);
  a->set_string_val(value);
}

// What a Chakra ET holds and chakra_et_reader.cpp reads back: the writer refuses anything beyond, rather than write
// a file that replays as something else or does not read at all.
constexpr int32_t max_et_rank = (1 << 24) - 1;     // the GlobalMetadata's rank, comm_src/comm_dst, comm_groups.json
constexpr int32_t max_et_stream = 1023;            // gputwin.stream
constexpr int32_t max_et_position = (1 << 24) - 1; // gputwin.layer, gputwin.micro_batch, gputwin.chunk
constexpr int64_t max_et_node_id = INT64_MAX / 2;  // node ids, a ring exchange's receive's included
constexpr double et_count_limit = 9223372036854775808.0; // 2^63: FLOPs and bytes are int64 num_ops, comm_size
constexpr uint64_t max_et_duration_micros = uint64_t{1} << 40;
// comm_tag: a message's sequence on its (src, dst) pair; a ring exchange's 2^24 + its sequence on its group; an
// all-to-all-v's 2^30 + its sequence on its group; all within int32 and apart, so a pair's tags never collide.
constexpr int64_t ring_tag_base = int64_t{1} << 24;
constexpr int64_t all_to_all_tag_base = int64_t{1} << 30;
constexpr int64_t max_ring_sequence = all_to_all_tag_base - ring_tag_base - 1;
constexpr int64_t max_all_to_all_sequence = INT32_MAX - all_to_all_tag_base;

uint64_t non_negative_round(double v)
{
  return v > 0 && std::isfinite(v) ? static_cast<uint64_t>(std::llround(v)) : 0;
}

// True when `text` is UTF-8 (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF): protobuf writes a proto3
// string that is not, with an error on stderr, and then refuses to parse it.
bool is_utf8(std::string_view text)
{
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char c = byte(i);
    size_t length = 0;
    unsigned char low = 0x80, high = 0xbf; // the second byte's range
    if (c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0xc2 && c <= 0xdf) {
      length = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      length = 3;
      low = c == 0xe0 ? 0xa0 : 0x80;  // no overlong form
      high = c == 0xed ? 0x9f : 0xbf; // no surrogate
    } else if (c >= 0xf0 && c <= 0xf4) {
      length = 4;
      low = c == 0xf0 ? 0x90 : 0x80;  // no overlong form
      high = c == 0xf4 ? 0x8f : 0xbf; // at most U+10FFFF
    } else {
      return false;
    }
    if (i + length > text.size() || byte(i + 1) < low || byte(i + 1) > high)
      return false;
    for (size_t k = i + 2; k < i + length; ++k)
      if (byte(k) < 0x80 || byte(k) > 0xbf)
        return false;
    i += length;
  }
  return true;
}

// A name as error messages show it: one line of UTF-8 (control characters, and every byte above 0x7f of a name that
// is not UTF-8, as '?'), at most 120 bytes.
std::string printable(const std::string& text)
{
  std::string out = text.substr(0, 120);
  const bool utf8 = is_utf8(out);
  for (char& c : out) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f || (byte > 0x7f && !utf8))
      c = '?';
  }
  return text.size() > 120 ? out + "..." : out;
}

[[noreturn]] void refuse(const traces::RankProgram& program, const traces::Op& op, const std::string& why)
{
  throw traces::TraceError("chakra export: rank " + std::to_string(program.rank) + " op " + std::to_string(op.id) +
                           " '" + printable(op.name) + "': " + why);
}

// The weights of an all-to-all written as an all-to-all-v (messages), nullopt for one written as a collective node.
std::optional<AllToAllWeights> all_to_all_v(const traces::Op& op, const ChakraExportOptions& options)
{
  if (op.kind != traces::OpKind::Collective || op.collective != CollectiveOp::AllToAll || !options.all_to_all_weights)
    return std::nullopt;
  std::optional<AllToAllWeights> weights = options.all_to_all_weights(op);
  if (weights && weights->rank.empty())
    return std::nullopt;
  return weights;
}

const std::vector<int32_t>& group_ranks(const traces::OpGraph& graph, const traces::Op& op)
{
  return graph.groups.at(static_cast<size_t>(op.group)).ranks;
}

// `program`'s rank's place in `op`'s group; refuses a rank that is not in it.
size_t rank_index(const traces::OpGraph& graph, const traces::RankProgram& program, const traces::Op& op)
{
  const std::vector<int32_t>& ranks = group_ranks(graph, op);
  const auto it = std::find(ranks.begin(), ranks.end(), program.rank);
  if (it == ranks.end())
    refuse(program, op, "the rank is not in its group " + std::to_string(op.group));
  return static_cast<size_t>(it - ranks.begin());
}

// The Chakra nodes `op` is written as: a ring exchange two, an all-to-all-v a send and a receive per peer, else one.
int64_t node_count(const traces::OpGraph& graph, const traces::Op& op, const ChakraExportOptions& options)
{
  if (op.kind == traces::OpKind::Collective && op.collective == CollectiveOp::SendRecv)
    return 2;
  if (all_to_all_v(op, options))
    return 2 * (static_cast<int64_t>(group_ranks(graph, op).size()) - 1);
  return 1;
}

// Refuses an all-to-all-v Chakra cannot hold as messages: weights not one per rank, a group without a peer, a
// sequence beyond its comm_tag.
void check_all_to_all_v(const traces::OpGraph& graph, const traces::RankProgram& program, const traces::Op& op,
                        const ChakraExportOptions& options)
{
  const std::optional<AllToAllWeights> weights = all_to_all_v(op, options);
  if (!weights)
    return;
  const std::vector<int32_t>& ranks = group_ranks(graph, op);
  if (ranks.size() < 2 || weights->rank.size() != ranks.size())
    refuse(program, op,
           "an all-to-all-v needs one weight per rank of a group of two or more (group of " +
               std::to_string(ranks.size()) + ", " + std::to_string(weights->rank.size()) + " weights)");
  (void)rank_index(graph, program, op);
  if (op.sequence < 0 || op.sequence > max_all_to_all_sequence)
    refuse(program, op,
           "all-to-all sequence " + std::to_string(op.sequence) + " beyond the comm_tag 2^30 + sequence (int32)");
}

// Refuses, with a TraceError naming the rank, op and field, what a Chakra ET of `program` would not hold as it is
// (the limits above). Compute durations are checked as they are written (they come from a callback).
void check_exportable(const traces::OpGraph& graph, const traces::RankProgram& program,
                      const ChakraExportOptions& options)
{
  const std::string rank = "chakra export: rank " + std::to_string(program.rank);
  if (program.rank < 0 || program.rank > max_et_rank)
    throw traces::TraceError(rank + ": a Chakra ET holds ranks 0 to " + std::to_string(max_et_rank));
  for (const auto& [key, value] : graph.metadata)
    if (!is_utf8(key) || !is_utf8(value))
      throw traces::TraceError(rank + ": metadata '" + printable(key) +
                               "' is not UTF-8 text (Chakra ET strings are UTF-8)");
  const auto count = [&](const traces::Op& op, const char* what, double v) {
    if (v >= et_count_limit)
      refuse(program, op, std::string(what) + " " + json_number(v) + " beyond the int64 a Chakra ET holds");
  };
  int64_t extra_nodes = 0; // nodes beyond one per op, numbered after the largest op id
  for (const traces::Op& op : program.ops) {
    check_all_to_all_v(graph, program, op, options);
    extra_nodes += node_count(graph, op, options) - 1;
  }
  for (const traces::Op& op : program.ops) {
    if (!is_utf8(op.name))
      refuse(program, op, "the name is not UTF-8 text (Chakra ET strings are UTF-8)");
    if (op.id < 0 || op.id >= max_et_node_id - extra_nodes)
      refuse(program, op,
             "id beyond the node ids a Chakra ET is read back with (below 2^62, less the rank's extra nodes)");
    if (op.stream < 0 || op.stream > max_et_stream)
      refuse(program, op,
             "stream " + std::to_string(op.stream) + " beyond the 0.." + std::to_string(max_et_stream) +
                 " a Chakra ET is read back with");
    if (op.layer < -1 || op.layer > max_et_position || op.micro_batch < -1 || op.micro_batch > max_et_position ||
        op.chunk < 0 || op.chunk > max_et_position)
      refuse(program, op,
             "layer, micro-batch or chunk beyond the -1.." + std::to_string(max_et_position) +
                 " a Chakra ET is read back with");
    count(op, "FLOPs", op.flops);
    count(op, "bytes", op.bytes);
    if (op.kind == traces::OpKind::Send || op.kind == traces::OpKind::Recv) {
      if (op.peer < 0 || op.peer > max_et_rank)
        refuse(program, op, "peer " + std::to_string(op.peer) + " beyond the ranks a Chakra ET holds");
      if (op.sequence < 0 || op.sequence >= ring_tag_base)
        refuse(program, op,
               "message sequence " + std::to_string(op.sequence) +
                   " beyond the comm_tag of a message (below 2^24; ring exchanges' tags are above)");
    }
    if (op.kind == traces::OpKind::Collective && op.collective == CollectiveOp::SendRecv) {
      const std::vector<int32_t>& ring = group_ranks(graph, op);
      if (ring.size() < 2)
        refuse(program, op,
               "a ring exchange in a group of " + std::to_string(ring.size()) +
                   " rank has no peer to send to (a Chakra send needs another rank)");
      if (op.sequence < 0 || op.sequence > max_ring_sequence)
        refuse(program, op,
               "ring exchange sequence " + std::to_string(op.sequence) +
                   " beyond the comm_tag 2^24 + sequence (int32)");
    }
  }
}

ChakraProtoMsg::CollectiveCommType comm_type(CollectiveOp op, const traces::RankProgram& program, const traces::Op& o)
{
  switch (op) {
  case CollectiveOp::AllReduce: return ChakraProtoMsg::ALL_REDUCE;
  case CollectiveOp::AllGather: return ChakraProtoMsg::ALL_GATHER;
  case CollectiveOp::ReduceScatter: return ChakraProtoMsg::REDUCE_SCATTER;
  case CollectiveOp::Broadcast: return ChakraProtoMsg::BROADCAST;
  case CollectiveOp::AllToAll: return ChakraProtoMsg::ALL_TO_ALL;
  case CollectiveOp::SendRecv: break;
  }
  refuse(program, o, "a send/recv collective has no Chakra collective type");
}

// Where the op sits in the iteration (ignored by ASTRA-sim, kept for people reading the trace).
void add_placement(Node& node, const traces::Op& op)
{
  add_string(node, "gputwin.phase", traces::to_string(op.phase));
  add_int32(node, "gputwin.stream", op.stream);
  add_int32(node, "gputwin.layer", op.layer);
  add_int32(node, "gputwin.micro_batch", op.micro_batch);
  add_int32(node, "gputwin.chunk", op.chunk);
}

// The ranks after and before `program`'s rank in the ring of a SendRecv collective's group.
std::pair<int32_t, int32_t> ring_neighbours(const traces::OpGraph& graph, const traces::RankProgram& program,
                                            const traces::Op& op)
{
  const std::vector<int32_t>& ring = group_ranks(graph, op);
  const size_t at = rank_index(graph, program, op), n = ring.size();
  return {ring[(at + 1) % n], ring[(at + n - 1) % n]};
}

// Tags of ring exchanges: above every pipeline message's (a message's tag is its sequence on its (src, dst)
// pair), the exchange's sequence on its group.
int32_t ring_tag(const traces::Op& op)
{
  return static_cast<int32_t>(ring_tag_base + op.sequence); // check_exportable: below 2^30
}

// Tags of an all-to-all-v's messages: 2^30 + the all-to-all's sequence on its group (one message a pair).
int32_t all_to_all_tag(const traces::Op& op)
{
  return static_cast<int32_t>(all_to_all_tag_base + op.sequence); // check_exportable: at most INT32_MAX
}

// pg_name of group index `group`: from 1, ASTRA-sim's CommunicatorGroup::set_id asserts id > 0 and its
// Workload::extract_comm_group takes "0" for the group of all ranks.
std::string chakra_pg_name(int32_t group)
{
  return std::to_string(int64_t{group} + 1);
}

void write_delimited(const google::protobuf::MessageLite& message, std::ostream& out)
{
  if (!google::protobuf::util::SerializeDelimitedToOstream(message, &out))
    throw traces::TraceError("chakra export: cannot serialize a message");
}

// One point-to-point message of `op` (a ring exchange's or an all-to-all-v's) as node `id`, with the dependencies
// `node` already holds.
struct Message {
  int64_t id = 0;
  bool send = true;
  int32_t src = 0, dst = 0, tag = 0;
  double bytes = 0;
};

void write_message(std::ostream& out, Node& node, const traces::Op& op, const Message& m)
{
  node.set_id(static_cast<uint64_t>(m.id));
  node.set_type(m.send ? ChakraProtoMsg::COMM_SEND_NODE : ChakraProtoMsg::COMM_RECV_NODE);
  node.clear_attr();
  add_bool(node, "is_cpu_op", false);
  add_int32(node, "comm_src", m.src);
  add_int32(node, "comm_dst", m.dst);
  add_int32(node, "comm_tag", m.tag);
  add_int64(node, "comm_size", static_cast<int64_t>(non_negative_round(m.bytes)));
  add_placement(node, op);
  write_delimited(node, out);
}

// An all-to-all-v as messages (`node` holding its dependencies): a send to every other rank of `ranks` (the first
// with the op's id), then a receive from every other rank, in ring order from `rank`, each of its pair's bytes;
// the ids beyond the op's taken from `next_id` and added to `extra`. `rank` is ranks[i].
void write_all_to_all_v(std::ostream& out, Node& node, const std::vector<int32_t>& ranks, size_t i,
                        const traces::Op& op, const AllToAllWeights& weights, int64_t& next_id,
                        std::vector<int64_t>& extra)
{
  const size_t n = ranks.size();
  const int32_t rank = ranks[i];
  for (size_t k = 1; k < n; ++k) { // to the k-th next rank: this rank's pair bytes
    const size_t j = (i + k) % n;
    const int64_t id = k == 1 ? op.id : next_id++;
    if (k > 1)
      extra.push_back(id);
    write_message(out, node, op,
                  {id, true, rank, ranks[j], all_to_all_tag(op), all_to_all_pair_bytes(op.bytes, weights, i, j, n)});
  }
  for (size_t k = 1; k < n; ++k) { // from the k-th previous rank, which sends here at its k-th step
    const size_t j = (i + n - k) % n;
    extra.push_back(next_id);
    write_message(out, node, op,
                  {next_id++, false, ranks[j], rank, all_to_all_tag(op), all_to_all_pair_bytes(op.bytes, weights, j, i, n)});
  }
}

} // namespace

void write_chakra_rank(std::ostream& out, const traces::OpGraph& graph, const traces::RankProgram& program,
                       const ChakraExportOptions& options)
{
  check_exportable(graph, program, options);
  ChakraProtoMsg::GlobalMetadata meta;
  meta.set_version(chakra_schema_version);
  {
    AttributeProto* a = meta.add_attr();
    a->set_name("generator");
    a->set_string_val("gputwin");
    a = meta.add_attr();
    a->set_name("rank");
    a->set_int32_val(program.rank);
    a = meta.add_attr();
    a->set_name(chakra_convention_attr);
    a->set_string_val(chakra_astra_sim_convention);
    for (const auto& [key, value] : graph.metadata) {
      a = meta.add_attr();
      a->set_name("gputwin." + key);
      a->set_string_val(value);
    }
  }
  write_delimited(meta, out);

  // A ring exchange (a SendRecv collective: context parallelism's K/V blocks, --tp-comm-overlap's chunks) has no
  // Chakra collective type: it is written as a send to the next rank of its group (id = the op's) and a receive
  // from the previous one (a fresh id after every op's), and whatever depends on the op depends on both. An
  // all-to-all-v likewise: a send to every other rank of its group (the first with the op's id), then a receive from
  // every other rank, in ring order from this rank.
  int64_t next_extra_id = 0;
  for (const traces::Op& op : program.ops)
    next_extra_id = std::max(next_extra_id, op.id + 1);
  std::map<int64_t, std::vector<int64_t>> extra_ids; // op id -> the ids of its other nodes

  std::map<int32_t, int64_t> last_on_stream; // stream -> id of its last op so far
  Node node;
  for (const traces::Op& op : program.ops) {
    node.Clear();
    node.set_id(static_cast<uint64_t>(op.id));
    node.set_name(op.name);
    // Dependencies: the op graph's explicit (cross-stream) deps plus the previous op of the same stream, all as
    // data_deps (ASTRA-sim's feeder releases a node when its data_deps are done).
    std::vector<int64_t> deps = op.deps;
    if (const auto it = last_on_stream.find(op.stream); it != last_on_stream.end())
      deps.push_back(it->second);
    for (size_t i = 0, n = deps.size(); i < n; ++i)
      if (const auto it = extra_ids.find(deps[i]); it != extra_ids.end())
        deps.insert(deps.end(), it->second.begin(), it->second.end());
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    for (const int64_t d : deps)
      node.add_data_deps(static_cast<uint64_t>(d));
    last_on_stream[op.stream] = op.id;

    if (op.kind == traces::OpKind::Collective && op.collective == CollectiveOp::SendRecv) {
      const auto [next, previous] = ring_neighbours(graph, program, op);
      write_message(out, node, op, {op.id, true, program.rank, next, ring_tag(op), op.bytes});
      // The receive: the same dependencies, from the previous rank.
      write_message(out, node, op, {next_extra_id, false, previous, program.rank, ring_tag(op), op.bytes});
      extra_ids[op.id] = {next_extra_id++};
      continue;
    }
    if (const std::optional<AllToAllWeights> weights = all_to_all_v(op, options)) {
      write_all_to_all_v(out, node, group_ranks(graph, op), rank_index(graph, program, op), op, *weights,
                         next_extra_id, extra_ids[op.id]);
      continue;
    }

    switch (op.kind) {
    case traces::OpKind::Compute:
    case traces::OpKind::Memcpy:
      node.set_type(ChakraProtoMsg::COMP_NODE);
      if (options.compute_duration_s) {
        const double micros = options.compute_duration_s(op) * 1e6;
        if (micros >= static_cast<double>(max_et_duration_micros) + 0.5) // rounds above it
          refuse(program, op,
                 "duration " + json_number(micros) + " us beyond the 2^40 a Chakra ET is read back with");
        node.set_duration_micros(non_negative_round(micros));
      }
      add_bool(node, "is_cpu_op", false);
      add_int64(node, "num_ops", static_cast<int64_t>(non_negative_round(op.flops)));
      add_uint64(node, "tensor_size", non_negative_round(op.bytes));
      break;
    case traces::OpKind::Collective: {
      node.set_type(ChakraProtoMsg::COMM_COLL_NODE);
      add_bool(node, "is_cpu_op", false);
      add_int64(node, "comm_type", comm_type(op.collective, program, op));
      const size_t members = group_ranks(graph, op).size();
      add_int64(node, "comm_size",
                static_cast<int64_t>(non_negative_round(astra_sim_comm_bytes(op.collective, op.bytes, members))));
      add_string(node, "pg_name", chakra_pg_name(op.group));
      break;
    }
    case traces::OpKind::Send:
    case traces::OpKind::Recv: {
      const bool send = op.kind == traces::OpKind::Send;
      node.set_type(send ? ChakraProtoMsg::COMM_SEND_NODE : ChakraProtoMsg::COMM_RECV_NODE);
      add_bool(node, "is_cpu_op", false);
      add_int32(node, "comm_src", send ? program.rank : op.peer);
      add_int32(node, "comm_dst", send ? op.peer : program.rank);
      add_int32(node, "comm_tag", static_cast<int32_t>(op.sequence));
      add_int64(node, "comm_size", static_cast<int64_t>(non_negative_round(op.bytes)));
      break;
    }
    }
    add_placement(node, op);
    write_delimited(node, out);
  }
}

int64_t chakra_node_count(const traces::OpGraph& graph, const traces::RankProgram& program,
                          const ChakraExportOptions& options)
{
  int64_t nodes = 0;
  for (const traces::Op& op : program.ops)
    nodes += node_count(graph, op, options);
  return nodes;
}

void write_chakra_comm_groups(std::ostream& out, const traces::OpGraph& graph)
{
  out << "{";
  bool first = true;
  for (size_t g = 0; g < graph.groups.size(); ++g) {
    if (graph.groups[g].ranks.empty())
      continue;
    out << (first ? "\n" : ",\n") << "  \"" << chakra_pg_name(static_cast<int32_t>(g)) << "\": [";
    first = false;
    for (size_t i = 0; i < graph.groups[g].ranks.size(); ++i)
      out << (i ? ", " : "") << graph.groups[g].ranks[i];
    out << "]";
  }
  out << "\n}\n";
}

ChakraExportSummary write_chakra_traces(const traces::OpGraph& graph, const std::filesystem::path& dir,
                                        const ChakraExportOptions& options)
{
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw traces::TraceError("--chakra: cannot create directory '" + dir.string() + "'" +
                             (ec ? ": " + ec.message() : std::string(": not a directory")));

  // Every file through the atomic writer: an interrupted or failed export never leaves a truncated file. What Chakra
  // cannot hold is refused before the first file.
  for (const traces::RankProgram& program : graph.ranks)
    check_exportable(graph, program, options);
  ChakraExportSummary summary;
  for (const traces::RankProgram& program : graph.ranks) {
    const std::filesystem::path path = dir / (options.prefix + "." + std::to_string(program.rank) + ".et");
    write_file_atomically(
        path.string(), [&](std::ostream& file) { write_chakra_rank(file, graph, program, options); }, "--chakra");
    summary.files.push_back(path);
    summary.nodes += chakra_node_count(graph, program, options);
    for (const traces::Op& op : program.ops) {
      const bool messages = op.kind == traces::OpKind::Collective &&
                            (op.collective == CollectiveOp::SendRecv || all_to_all_v(op, options));
      summary.collectives += op.kind == traces::OpKind::Collective && !messages ? 1 : 0;
    }
  }
  summary.comm_groups_file = dir / (options.prefix + ".comm_groups.json");
  write_file_atomically(
      summary.comm_groups_file.string(), [&](std::ostream& file) { write_chakra_comm_groups(file, graph); },
      "--chakra");
  return summary;
}

} // namespace gputwin::chakra
