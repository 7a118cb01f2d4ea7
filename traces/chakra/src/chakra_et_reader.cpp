// Chakra protobuf ET (length-delimited GlobalMetadata + Nodes, schema et_def.proto 0.0.4) -> op graph
// (traces/chakra/README.md, "Import: Chakra protobuf ET").
#include "gputwin/chakra/chakra_reader.hpp"
#include "gputwin/chakra/chakra_writer.hpp"

#include "gputwin/common/text.hpp"
#include "et_def.pb.h"
#include "gputwin/traces/json_value.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <queue>
#include <set>
#include <sstream>
#include <unordered_map>

namespace gputwin::chakra {

namespace {

using ChakraProtoMsg::AttributeProto;
using ChakraProtoMsg::Node;
using traces::TraceError;

const AttributeProto* find_attr(const google::protobuf::RepeatedPtrField<AttributeProto>& attrs,
                                const std::string& name)
{
  for (const AttributeProto& a : attrs)
    if (a.name() == name)
      return &a;
  return nullptr;
}

// An integer attribute of any integer width; nullopt when absent or not an integer.
std::optional<int64_t> int_attr(const google::protobuf::RepeatedPtrField<AttributeProto>& attrs,
                                const std::string& name)
{
  const AttributeProto* a = find_attr(attrs, name);
  if (a == nullptr)
    return std::nullopt;
  switch (a->value_case()) {
  case AttributeProto::kInt32Val: return a->int32_val();
  case AttributeProto::kInt64Val: return a->int64_val();
  case AttributeProto::kUint32Val: return a->uint32_val();
  case AttributeProto::kUint64Val:
    return a->uint64_val() > static_cast<uint64_t>(INT64_MAX)
               ? std::nullopt
               : std::optional<int64_t>(static_cast<int64_t>(a->uint64_val()));
  case AttributeProto::kSint32Val: return a->sint32_val();
  case AttributeProto::kSint64Val: return a->sint64_val();
  case AttributeProto::kFixed32Val: return a->fixed32_val();
  case AttributeProto::kFixed64Val:
    return a->fixed64_val() > static_cast<uint64_t>(INT64_MAX)
               ? std::nullopt
               : std::optional<int64_t>(static_cast<int64_t>(a->fixed64_val()));
  case AttributeProto::kSfixed32Val: return a->sfixed32_val();
  case AttributeProto::kSfixed64Val: return a->sfixed64_val();
  default: return std::nullopt;
  }
}

std::optional<std::string> string_attr(const google::protobuf::RepeatedPtrField<AttributeProto>& attrs,
                                       const std::string& name)
{
  const AttributeProto* a = find_attr(attrs, name);
  if (a == nullptr)
    return std::nullopt;
  if (a->value_case() == AttributeProto::kStringVal)
    return a->string_val();
  if (const auto i = int_attr(attrs, name))
    return std::to_string(*i);
  return std::nullopt;
}

// One rank file, before its groups are known: ops whose collectives name their pg_name.
struct RankParse {
  traces::RankProgram program;
  std::map<int64_t, std::string> pg_of_op; // collective op id -> pg_name ("" when absent)
  std::map<std::string, std::string> metadata;
  std::string version;
  // comm_size convention: ASTRA-sim's (all-gather sizes are each rank's share) when the GlobalMetadata says so,
  // nccl-tests bytes otherwise (other producers, gputwin exports without the attribute).
  bool astra_sim_sizes = false;
  ChakraImportStats stats;
};

[[noreturn]] void fail_at(const std::string& source, const std::string& what)
{
  throw TraceError(source + ": " + what);
}

std::string node_text(const Node& n)
{
  return "node " + std::to_string(n.id()) + " '" + printable_excerpt(n.name()) + "'";
}

// Reads the GlobalMetadata message into `r`: the schema version, the rank (default `default_rank`), the comm_size
// convention and gputwin's own metadata.
void read_global_metadata(google::protobuf::io::ZeroCopyInputStream& stream, const std::string& source,
                          int32_t default_rank, RankParse& r)
{
  ChakraProtoMsg::GlobalMetadata meta;
  bool clean_eof = false;
  if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&meta, &stream, &clean_eof))
    fail_at(source, clean_eof ? "empty file (expected a Chakra ET: a GlobalMetadata message, then nodes)"
                              : "not a Chakra ET (the first message is no GlobalMetadata)");
  if (meta.version().empty())
    fail_at(source, "GlobalMetadata without 'version' (expected the Chakra schema version, e.g. 0.0.4)");
  r.version = meta.version();
  r.program.rank = default_rank;
  if (const auto rank = int_attr(meta.attr(), "rank")) {
    if (*rank < 0 || *rank >= (1 << 24))
      fail_at(source, "GlobalMetadata attribute 'rank' " + std::to_string(*rank) + " out of range");
    r.program.rank = static_cast<int32_t>(*rank);
  }
  if (const auto convention = string_attr(meta.attr(), chakra_convention_attr)) {
    if (*convention != chakra_astra_sim_convention)
      fail_at(source, std::string("GlobalMetadata attribute '") + chakra_convention_attr + "' is '" +
                          printable_excerpt(*convention) + "' (expected " + chakra_astra_sim_convention + ")");
    r.astra_sim_sizes = true;
  }
  for (const AttributeProto& a : meta.attr())
    if (a.name().rfind("gputwin.", 0) == 0 && a.value_case() == AttributeProto::kStringVal)
      r.metadata[a.name().substr(8)] = a.string_val();
}

// A rank file's nodes in file order, with the position of each node id.
struct RankNodes {
  std::vector<Node> nodes;
  std::unordered_map<uint64_t, size_t> index_of;
};

// Reads the nodes after the GlobalMetadata up to the end of the file; each must have a known type and its own id.
RankNodes read_nodes(google::protobuf::io::ZeroCopyInputStream& stream, const std::string& source)
{
  RankNodes r;
  for (;;) {
    Node node;
    bool clean_eof = false;
    const int64_t offset = stream.ByteCount();
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&node, &stream, &clean_eof)) {
      if (!clean_eof)
        fail_at(source, "truncated or corrupt after " + std::to_string(r.nodes.size()) +
                            " nodes (the message at byte " + std::to_string(offset) + " cannot be decoded)");
      break;
    }
    if (!ChakraProtoMsg::NodeType_IsValid(node.type()))
      fail_at(source,
              node_text(node) + ": unknown node type " + std::to_string(static_cast<int>(node.type())) +
                  " (expected METADATA_NODE, MEM_LOAD_NODE, MEM_STORE_NODE, COMP_NODE, COMM_SEND_NODE, COMM_RECV_NODE, "
                  "COMM_COLL_NODE)");
    if (node.type() == ChakraProtoMsg::INVALID_NODE)
      fail_at(source, node_text(node) + ": node type INVALID_NODE (field 'type' missing)");
    if (!r.index_of.emplace(node.id(), r.nodes.size()).second)
      fail_at(source, node_text(node) + ": duplicate node id");
    r.nodes.push_back(std::move(node));
  }
  return r;
}

// Topological order of data_deps + ctrl_deps, ties by position in the file. Throws on a dependency that names no
// node, a node that depends on itself, and a cycle.
std::vector<size_t> topological_order(const RankNodes& rank_nodes, const std::string& source)
{
  const std::vector<Node>& nodes = rank_nodes.nodes;
  std::vector<std::vector<size_t>> successors(nodes.size());
  std::vector<size_t> pending(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const auto* deps : {&nodes[i].data_deps(), &nodes[i].ctrl_deps()})
      for (const uint64_t d : *deps) {
        const auto it = rank_nodes.index_of.find(d);
        if (it == rank_nodes.index_of.end())
          fail_at(source, node_text(nodes[i]) + ": dependency " + std::to_string(d) + " names no node of the file");
        if (it->second == i)
          fail_at(source, node_text(nodes[i]) + ": depends on itself");
        successors[it->second].push_back(i);
        ++pending[i];
      }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (pending[i] == 0)
      ready.push(i);
  std::vector<size_t> order;
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (const size_t s : successors[i])
      if (--pending[s] == 0)
        ready.push(s);
  }
  if (order.size() != nodes.size())
    for (size_t i = 0; i < nodes.size(); ++i)
      if (pending[i] > 0)
        fail_at(source, node_text(nodes[i]) + ": on a dependency cycle");
  return order;
}

// An integer attribute the node's type requires; throws when it is absent or not an integer.
int64_t required_int_attr(const Node& n, const char* name, const std::string& source)
{
  const std::optional<int64_t> v = int_attr(n.attr(), name);
  if (!v)
    fail_at(source, node_text(n) + ": " + ChakraProtoMsg::NodeType_Name(n.type()) + " without attribute '" + name +
                        "' (an integer)");
  return *v;
}

bool is_cpu_op(const Node& n)
{
  const AttributeProto* cpu = find_attr(n.attr(), "is_cpu_op");
  return cpu != nullptr && cpu->value_case() == AttributeProto::kBoolVal && cpu->bool_val();
}

// A COMP_NODE as a compute op on stream 0: timed by its duration_micros where given, else by num_ops (FLOPs) or
// tensor_size (bytes).
void set_compute_op(traces::Op& op, const Node& n, const std::string& source, ChakraImportStats& stats)
{
  op.kind = traces::OpKind::Compute;
  op.stream = 0;
  op.flops = static_cast<double>(std::max<int64_t>(0, int_attr(n.attr(), "num_ops").value_or(0)));
  op.bytes = static_cast<double>(std::max<int64_t>(0, int_attr(n.attr(), "tensor_size").value_or(0)));
  if (n.duration_micros() > 0) {
    if (n.duration_micros() > uint64_t{1} << 40)
      fail_at(source, node_text(n) + ": duration_micros " + std::to_string(n.duration_micros()) + " out of range");
    op.duration_ns = static_cast<int64_t>(n.duration_micros()) * 1000;
    ++stats.timed_by_duration;
  } else {
    ++(op.flops > 0 ? stats.timed_by_flops : stats.timed_by_bytes);
  }
  stats.flops += op.flops;
}

struct CollectiveAttrs {
  ChakraProtoMsg::CollectiveCommType type;
  int64_t size_bytes;
};

// The comm_type and comm_size of a COMM_COLL_NODE; throws when either is missing or out of range.
CollectiveAttrs collective_attrs(const Node& n, const std::string& source)
{
  const int64_t type = required_int_attr(n, "comm_type", source);
  const int64_t size = required_int_attr(n, "comm_size", source);
  if (!ChakraProtoMsg::CollectiveCommType_IsValid(static_cast<int>(type)) || type != static_cast<int>(type))
    fail_at(source,
            node_text(n) + ": unknown comm_type " + std::to_string(type) + " (expected 0..9 of CollectiveCommType)");
  if (size < 0)
    fail_at(source, node_text(n) + ": comm_size " + std::to_string(size) + " (expected bytes >= 0)");
  return {static_cast<ChakraProtoMsg::CollectiveCommType>(type), size};
}

// The collective gputwin runs for a Chakra comm_type; nullopt for those it does not model.
std::optional<CollectiveOp> modelled_collective(ChakraProtoMsg::CollectiveCommType type)
{
  switch (type) {
  case ChakraProtoMsg::ALL_REDUCE:
  case ChakraProtoMsg::REDUCE: return CollectiveOp::AllReduce; // reduce: the upper bound
  case ChakraProtoMsg::ALL_GATHER: return CollectiveOp::AllGather;
  case ChakraProtoMsg::REDUCE_SCATTER:
  case ChakraProtoMsg::REDUCE_SCATTER_BLOCK: return CollectiveOp::ReduceScatter;
  case ChakraProtoMsg::BROADCAST: return CollectiveOp::Broadcast;
  case ChakraProtoMsg::ALL_TO_ALL: return CollectiveOp::AllToAll;
  default: return std::nullopt;
  }
}

// A COMM_COLL_NODE as a collective op on stream 1; its group is resolved from its pg_name once all files are read.
void set_collective_op(traces::Op& op, CollectiveOp collective, int64_t size_bytes, const Node& n, RankParse& r)
{
  op.collective = collective;
  op.kind = traces::OpKind::Collective;
  op.stream = 1;
  op.bytes = static_cast<double>(size_bytes);
  r.pg_of_op[op.id] = string_attr(n.attr(), "pg_name").value_or("");
  ++r.stats.collectives;
  r.stats.collective_bytes += op.bytes;
}

using MessageSequences = std::map<std::pair<int32_t, int32_t>, int64_t>; // (src, dst) -> messages so far

// A COMM_SEND_NODE or COMM_RECV_NODE as a send or receive on stream 2, numbered per (src, dst) pair. This file's
// rank must be its source (send) or destination (receive).
void set_message_op(traces::Op& op, const Node& n, const std::string& source, RankParse& r,
                    MessageSequences& message_sequence)
{
  const bool send = n.type() == ChakraProtoMsg::COMM_SEND_NODE;
  const int64_t src = required_int_attr(n, "comm_src", source), dst = required_int_attr(n, "comm_dst", source),
                size = required_int_attr(n, "comm_size", source);
  const int64_t self = send ? src : dst, peer = send ? dst : src;
  if (self != r.program.rank)
    fail_at(source, node_text(n) + ": " + (send ? "comm_src " : "comm_dst ") + std::to_string(self) +
                        " is not this file's rank " + std::to_string(r.program.rank));
  if (peer < 0 || peer >= (1 << 24) || peer == self || size < 0)
    fail_at(source, node_text(n) + ": peer " + std::to_string(peer) + ", comm_size " + std::to_string(size) +
                        " (expected another rank and bytes >= 0)");
  op.kind = send ? traces::OpKind::Send : traces::OpKind::Recv;
  op.stream = 2;
  op.peer = static_cast<int32_t>(peer);
  op.bytes = static_cast<double>(size);
  op.sequence = message_sequence[{static_cast<int32_t>(src), static_cast<int32_t>(dst)}]++;
  ++(send ? r.stats.sends : r.stats.recvs);
}

// gputwin's own annotations (a .et written by simulate --chakra) restore where the op sat.
void apply_gputwin_annotations(traces::Op& op, const Node& n)
{
  if (const auto op_stream = int_attr(n.attr(), "gputwin.stream"); op_stream && *op_stream >= 0 && *op_stream < 1024)
    op.stream = static_cast<int32_t>(*op_stream);
  if (const auto phase = string_attr(n.attr(), "gputwin.phase"))
    op.phase = traces::parse_phase(*phase).value_or(traces::Phase::Forward);
  if (const auto layer = int_attr(n.attr(), "gputwin.layer"); layer && *layer >= -1 && *layer < (1 << 24))
    op.layer = static_cast<int32_t>(*layer);
  if (const auto mb = int_attr(n.attr(), "gputwin.micro_batch"); mb && *mb >= -1 && *mb < (1 << 24))
    op.micro_batch = static_cast<int32_t>(*mb);
  if (const auto chunk = int_attr(n.attr(), "gputwin.chunk"); chunk && *chunk >= 0 && *chunk < (1 << 24))
    op.chunk = static_cast<int32_t>(*chunk);
}

// The op a node stands for (without its dependencies), or nullopt for a node that becomes no op: a metadata node
// (counted as structure) or one gputwin ignores (counted by reason in r.stats.ignored).
std::optional<traces::Op> node_op(const Node& n, const std::string& source, RankParse& r,
                                  MessageSequences& message_sequence)
{
  const auto ignore = [&](const std::string& reason) {
    r.stats.ignored[reason][n.name()]++;
    return std::nullopt;
  };
  traces::Op op;
  op.id = static_cast<int64_t>(n.id() > static_cast<uint64_t>(INT64_MAX / 2) ? -1 : static_cast<int64_t>(n.id()));
  if (op.id < 0)
    fail_at(source, node_text(n) + ": node id out of range");
  op.name = n.name();
  switch (n.type()) {
  case ChakraProtoMsg::METADATA_NODE: ++r.stats.structure; return std::nullopt;
  case ChakraProtoMsg::MEM_LOAD_NODE:
  case ChakraProtoMsg::MEM_STORE_NODE: return ignore("memory load/store node (not modelled)");
  case ChakraProtoMsg::COMP_NODE:
    if (is_cpu_op(n))
      return ignore("CPU op (is_cpu_op: host work, not simulated)");
    set_compute_op(op, n, source, r.stats);
    break;
  case ChakraProtoMsg::COMM_COLL_NODE: {
    const CollectiveAttrs attrs = collective_attrs(n, source);
    const std::optional<CollectiveOp> collective = modelled_collective(attrs.type);
    if (!collective)
      return ignore("collective gputwin does not model (" + ChakraProtoMsg::CollectiveCommType_Name(attrs.type) + ")");
    set_collective_op(op, *collective, attrs.size_bytes, n, r);
    break;
  }
  case ChakraProtoMsg::COMM_SEND_NODE:
  case ChakraProtoMsg::COMM_RECV_NODE: set_message_op(op, n, source, r, message_sequence); break;
  default: fail_at(source, node_text(n) + ": unknown node type"); // NodeType_IsValid let it through: a newer schema
  }
  apply_gputwin_annotations(op, n);
  return op;
}

// The nodes in `order` as the rank program's ops. Nodes that become no op pass their dependencies on to the nodes
// after them.
void add_ops(const RankNodes& rank_nodes, const std::vector<size_t>& order, const std::string& source, RankParse& r)
{
  const std::vector<Node>& nodes = rank_nodes.nodes;
  std::vector<std::vector<int64_t>> resolved(nodes.size()); // op ids a node stands for as a dependency
  MessageSequences message_sequence;
  for (const size_t i : order) {
    const Node& n = nodes[i];
    std::set<int64_t> deps;
    for (const auto* list : {&n.data_deps(), &n.ctrl_deps()})
      for (const uint64_t d : *list) {
        const auto& via = resolved[rank_nodes.index_of.at(d)];
        deps.insert(via.begin(), via.end());
      }
    std::optional<traces::Op> op = node_op(n, source, r, message_sequence);
    if (!op) {
      resolved[i].assign(deps.begin(), deps.end());
      continue;
    }
    op->deps.assign(deps.begin(), deps.end());
    resolved[i] = {op->id};
    r.program.ops.push_back(std::move(*op));
  }
}

bool ids_increase(const std::vector<traces::Op>& ops)
{
  return std::adjacent_find(ops.begin(), ops.end(), [](const traces::Op& previous, const traces::Op& next) {
           return next.id <= previous.id;
         }) == ops.end();
}

// Op ids must increase in issue order: renumbers the ops 0, 1, ... (their dependencies and pg_names with them).
void renumber_ops(RankParse& r)
{
  std::unordered_map<int64_t, int64_t> renumber;
  for (size_t k = 0; k < r.program.ops.size(); ++k)
    renumber[r.program.ops[k].id] = static_cast<int64_t>(k);
  std::map<int64_t, std::string> pg;
  for (traces::Op& op : r.program.ops) {
    if (const auto it = r.pg_of_op.find(op.id); it != r.pg_of_op.end())
      pg[renumber.at(op.id)] = it->second;
    op.id = renumber.at(op.id);
    for (int64_t& d : op.deps)
      d = renumber.at(d);
    std::sort(op.deps.begin(), op.deps.end());
  }
  r.pg_of_op = std::move(pg);
}

RankParse parse_rank(std::string_view bytes, const std::string& source, int32_t default_rank)
{
  // A corrupt file is reported as a TraceError, not by protobuf's own log lines on stderr (invalid UTF-8).
  const google::protobuf::LogSilencer quiet;
  google::protobuf::io::ArrayInputStream stream(bytes.data(),
                                                static_cast<int>(std::min<size_t>(bytes.size(), INT32_MAX)));
  RankParse r;
  read_global_metadata(stream, source, default_rank, r);
  const RankNodes nodes = read_nodes(stream, source);
  r.stats.nodes = static_cast<int64_t>(nodes.nodes.size());
  if (nodes.nodes.empty())
    fail_at(source, "no nodes after the GlobalMetadata");
  add_ops(nodes, topological_order(nodes, source), source, r);
  if (r.program.ops.empty())
    fail_at(source, "none of its " + std::to_string(nodes.nodes.size()) +
                        " nodes is a compute or communication node gputwin can run");
  if (!ids_increase(r.program.ops))
    renumber_ops(r);
  return r;
}

void add_stats(ChakraImportStats& into, const ChakraImportStats& s)
{
  into.nodes += s.nodes;
  into.timed_by_duration += s.timed_by_duration;
  into.timed_by_flops += s.timed_by_flops;
  into.timed_by_bytes += s.timed_by_bytes;
  into.memcpys += s.memcpys;
  into.collectives += s.collectives;
  into.sends += s.sends;
  into.recvs += s.recvs;
  into.waits += s.waits;
  into.structure += s.structure;
  into.flops += s.flops;
  into.collective_bytes += s.collective_bytes;
  for (const auto& [reason, names] : s.ignored)
    for (const auto& [name, count] : names)
      into.ignored[reason][name] += count;
}

// The rank files read together: groups from `comm_groups` by pg_name, else the world (every rank read).
ChakraTrace assemble(std::vector<std::pair<std::string, RankParse>> files,
                     const std::map<std::string, std::vector<int32_t>>& comm_groups)
{
  ChakraTrace trace;
  trace.source = files.front().first;
  trace.input = ChakraInput::ProtobufEt;
  trace.schema = files.front().second.version;
  trace.rank = files.front().second.program.rank;
  trace.graph.metadata = files.front().second.metadata;
  std::vector<int32_t> world;
  for (const auto& [source, r] : files)
    world.push_back(r.program.rank);
  std::sort(world.begin(), world.end());
  if (const auto dup = std::adjacent_find(world.begin(), world.end()); dup != world.end())
    throw TraceError(trace.source + ": two files describe rank " + std::to_string(*dup));
  std::map<std::string, int32_t> group_of_pg;
  for (auto& [source, r] : files) {
    for (traces::Op& op : r.program.ops) {
      if (op.kind != traces::OpKind::Collective)
        continue;
      const std::string& pg = r.pg_of_op.at(op.id);
      auto [it, added] = group_of_pg.emplace(pg, static_cast<int32_t>(trace.graph.groups.size()));
      if (added) {
        const auto listed = comm_groups.find(pg);
        std::vector<int32_t> ranks = listed != comm_groups.end() ? listed->second : world;
        trace.graph.groups.push_back({pg.empty() ? "world" : "pg:" + pg, ranks});
      }
      op.group = it->second;
      const auto& ranks = trace.graph.groups[static_cast<size_t>(op.group)].ranks;
      if (std::find(ranks.begin(), ranks.end(), r.program.rank) == ranks.end())
        throw TraceError(source + ": op " + std::to_string(op.id) + ": rank " + std::to_string(r.program.rank) +
                         " is not a member of pg_name '" + printable_excerpt(pg) + "'");
      if (r.astra_sim_sizes) { // back to the nccl-tests bytes the op graph holds
        const double bytes = nccl_tests_bytes_from_astra_sim(op.collective, op.bytes, ranks.size());
        r.stats.collective_bytes += bytes - op.bytes;
        op.bytes = bytes;
      }
    }
    // Sequence numbers: the n-th collective of its group on this rank.
    std::map<int32_t, int64_t> sequence;
    for (traces::Op& op : r.program.ops)
      if (op.kind == traces::OpKind::Collective)
        op.sequence = sequence[op.group]++;
    add_stats(trace.stats, r.stats);
  }
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.second.program.rank < b.second.program.rank; });
  for (auto& [source, r] : files)
    trace.graph.ranks.push_back(std::move(r.program));
  int32_t top = world.back();
  for (const traces::CommGroup& g : trace.graph.groups)
    for (const int32_t rank : g.ranks)
      top = std::max(top, rank);
  trace.world_size = top + 1;
  trace.graph.metadata["producer"] =
      trace.graph.metadata.count("producer") ? trace.graph.metadata["producer"] : "chakra et";
  return trace;
}

std::map<std::string, std::vector<int32_t>> read_comm_groups(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  traces::JsonValue root;
  try {
    root = traces::parse_json(text.str(), 8);
  } catch (const traces::JsonParseError& e) {
    throw TraceError(path + ":" + e.what());
  }
  const auto bad = [&](const std::string& what) {
    throw TraceError(path + ": " + what + " (expected {\"<pg_name>\": [ranks...], ...})");
  };
  if (root.type != traces::JsonValue::Type::Object)
    bad("not an object");
  std::map<std::string, std::vector<int32_t>> groups;
  for (size_t i = 0; i < root.keys.size(); ++i) {
    const traces::JsonValue& ranks = root.items[i];
    if (ranks.type != traces::JsonValue::Type::Array || ranks.items.empty())
      bad("group '" + root.keys[i] + "' is not a non-empty array");
    std::vector<int32_t>& out = groups[root.keys[i]];
    for (const traces::JsonValue& r : ranks.items) {
      const std::optional<int64_t> v = r.as_int64();
      if (!v || *v < 0 || *v >= (1 << 24))
        bad("group " + std::to_string(i) + " has a rank that is not an integer 0..2^24");
      out.push_back(static_cast<int32_t>(*v));
    }
    std::vector<int32_t> sorted = out;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
      bad("group " + std::to_string(i) + " lists a rank twice");
  }
  return groups;
}

std::string read_file(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw TraceError(path + ": cannot open the Chakra ET file (expected a readable file)");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "<prefix>.<rank>.et" -> (prefix, rank); nullopt for any other name.
std::optional<std::pair<std::string, int32_t>> rank_file_name(const std::string& name)
{
  if (name.size() < 4 || name.compare(name.size() - 3, 3, ".et") != 0)
    return std::nullopt;
  const std::string stem = name.substr(0, name.size() - 3);
  const size_t dot = stem.rfind('.');
  if (dot == std::string::npos || dot + 1 == stem.size() || stem.size() - dot > 8 ||
      !std::all_of(stem.begin() + static_cast<std::ptrdiff_t>(dot) + 1, stem.end(), ::isdigit))
    return std::nullopt;
  return std::make_pair(stem.substr(0, dot), static_cast<int32_t>(std::stol(stem.substr(dot + 1))));
}

} // namespace

std::string to_string(ChakraInput input)
{
  return input == ChakraInput::PytorchHostJson ? "pytorch-et-json" : "chakra-et";
}

int64_t ChakraImportStats::ignored_nodes() const
{
  int64_t n = 0;
  for (const auto& [reason, names] : ignored)
    for (const auto& [name, count] : names)
      n += count;
  return n;
}

bool is_chakra_et_path(std::string_view path)
{
  return path.size() > 3 && path.substr(path.size() - 3) == ".et";
}

ChakraTrace parse_chakra_et(std::string_view bytes, const std::string& source, int32_t default_rank,
                            const std::map<std::string, std::vector<int32_t>>& comm_groups)
{
  std::vector<std::pair<std::string, RankParse>> files;
  files.emplace_back(source, parse_rank(bytes, source, default_rank));
  return assemble(std::move(files), comm_groups);
}

ChakraTrace read_chakra_et(const std::string& path, std::string_view text)
{
  namespace fs = std::filesystem;
  const std::string first_text = text.empty() ? read_file(path) : std::string(text);
  const fs::path p(path);
  const auto named = rank_file_name(p.filename().string());
  std::vector<std::pair<std::string, RankParse>> files;
  files.emplace_back(path, parse_rank(first_text, path, named ? named->second : 0));
  std::map<std::string, std::vector<int32_t>> comm_groups;
  if (named) {
    const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
    std::vector<std::pair<int32_t, fs::path>> siblings;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const auto other = rank_file_name(it->path().filename().string());
      if (other && other->first == named->first && other->second != named->second)
        siblings.emplace_back(other->second, it->path());
    }
    std::sort(siblings.begin(), siblings.end());
    for (const auto& [rank, sibling] : siblings)
      files.emplace_back(sibling.string(), parse_rank(read_file(sibling.string()), sibling.string(), rank));
    const fs::path groups = dir / (named->first + ".comm_groups.json");
    if (fs::is_regular_file(groups, ec))
      comm_groups = read_comm_groups(groups.string());
  }
  return assemble(std::move(files), comm_groups);
}

} // namespace gputwin::chakra
