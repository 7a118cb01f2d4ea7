// PyTorch / Chakra host execution trace (JSON) -> the op graph of the rank it describes
// (traces/chakra/README.md, "Import"): the operator tree walked in program order, each node a collective, a wait,
// a compute op (GEMM-like by FLOPs, other kernels by bytes; pytorch_et_node.hpp), structure, or ignored.
#include "gputwin/chakra/chakra_reader.hpp"

#include "pytorch_et_node.hpp"
#include "gputwin/common/text.hpp"

#include "gputwin/traces/json_value.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <unordered_map>

namespace gputwin::chakra {

namespace {

using namespace et;
using traces::JsonValue;
using traces::TraceError;

class EtReader {
public:
  EtReader(const std::string& source) : source_(source) {}

  ChakraTrace read(std::string_view json_text);

private:
  [[noreturn]] void fail(const std::string& what) const { throw TraceError(source_ + ": " + what); }
  [[noreturn]] void fail(const EtNode& n, const std::string& what) const { fail_node(source_, n, what); }

  void read_process_groups(const EtNode& n);
  void visit(size_t index, traces::Phase phase);
  void ignore_subtree(size_t index, const std::string& reason);
  bool emit_gemm_like(const EtNode& n, traces::Phase phase);
  void emit_leaf(const EtNode& n, traces::Phase phase);
  void emit_comm(size_t index);
  void add_compute(const EtNode& n, traces::Op op);
  int32_t group_for(const JsonValue* pg, int64_t world_size, const EtNode& n);

  const std::string& source_;
  std::vector<EtNode> nodes_;
  std::unordered_map<int64_t, size_t> index_of_;
  ChakraTrace trace_;
  bool has_waits_ = false;

  // Process groups from "## process_group:init ##": pg_name / backend id -> ranks.
  struct ProcessGroup {
    std::string name;
    int64_t backend_id = -1;
    std::vector<int32_t> ranks;
  };
  std::vector<ProcessGroup> process_groups_;
  std::set<int64_t> unreadable_groups_;                 // ids of process-group descriptions that could not be read
  std::map<std::vector<int32_t>, int32_t> group_index_; // ranks -> index into graph.groups

  // The program being built.
  std::vector<traces::Op> ops_;
  int64_t last_compute_ = -1;
  std::vector<int64_t> unwaited_; // collectives issued since the last wait
  std::vector<int64_t> blocking_; // collectives the next compute op waits for
  std::map<int32_t, int64_t> sequence_;
};

} // namespace

void EtReader::add_compute(const EtNode& n, traces::Op op)
{
  op.id = static_cast<int64_t>(ops_.size());
  op.name = n.name;
  op.stream = 0;
  op.deps = blocking_;
  blocking_.clear();
  if (n.dur_us) {
    op.duration_ns = std::llround(*n.dur_us * 1e3);
    ++trace_.stats.timed_by_duration;
  } else if (op.flops > 0 || op.gemm.m > 0) {
    ++trace_.stats.timed_by_flops;
  } else {
    ++trace_.stats.timed_by_bytes;
  }
  if (op.kind == traces::OpKind::Memcpy)
    ++trace_.stats.memcpys;
  trace_.stats.flops += op.flops;
  last_compute_ = op.id;
  ops_.push_back(std::move(op));
}

// A GEMM-like aten op (the outermost one: its children are the same work), timed by its FLOPs.
bool EtReader::emit_gemm_like(const EtNode& n, traces::Phase phase)
{
  const std::optional<GemmWork> work = gemm_like_work(n, source_);
  if (!work)
    return false;
  traces::Op op;
  op.kind = traces::OpKind::Compute;
  op.phase = phase;
  op.flops = work->flops;
  op.gemm = work->gemm;
  op.bytes = work->bytes;
  add_compute(n, std::move(op));
  return true;
}

// A leaf op (no children): a kernel on CUDA tensors (timed by its bytes), a copy between host and device, or
// nothing the GPU runs.
void EtReader::emit_leaf(const EtNode& n, traces::Phase phase)
{
  if (launches_no_kernel(n.name)) {
    trace_.stats.ignored["no GPU work (allocation, view, metadata)"][n.name]++;
    return;
  }
  const std::vector<EtTensor> ins = tensors(n, n.inputs, source_), outs = tensors(n, n.outputs, source_);
  bool cuda = false, cpu = false;
  for (const auto* list : {&ins, &outs})
    for (const EtTensor& t : *list)
      (t.cuda ? cuda : cpu) = true;
  if (!cuda) {
    trace_.stats.ignored["host only (no CUDA tensor)"][n.name]++;
    return;
  }
  traces::Op op;
  op.phase = phase;
  if (cpu && (n.name.find("copy") != std::string::npos || n.name == "aten::_local_scalar_dense")) {
    op.kind = traces::OpKind::Memcpy;
    double largest = 0;
    for (const EtTensor& t : ins)
      largest = std::max(largest, t.bytes());
    op.bytes = largest;
  } else {
    op.kind = traces::OpKind::Compute;
    op.bytes = total_bytes(ins) + total_bytes(outs);
  }
  add_compute(n, std::move(op));
}

void EtReader::read_process_groups(const EtNode& n)
{
  // inputs.values[0]: a JSON string, a list of {pg_name, backend_id, ranks, group_size, ...}.
  const auto unreadable = [&](const std::string& why) {
    trace_.stats.ignored["process group description unreadable (" + why + ")"][n.name]++;
    unreadable_groups_.insert(n.id);
  };
  if (n.inputs.empty() || n.inputs[0].value->type != JsonValue::Type::String)
    return unreadable("no string argument");
  JsonValue list;
  try {
    list = traces::parse_json(n.inputs[0].value->text, 16);
  } catch (const traces::JsonParseError& e) {
    return unreadable("not JSON");
  }
  if (list.type != JsonValue::Type::Array)
    return unreadable("not a list");
  for (const JsonValue& pg : list.items) {
    if (pg.type != JsonValue::Type::Object)
      continue;
    ProcessGroup g;
    if (const JsonValue* name = pg.find("pg_name"))
      g.name = name->type == JsonValue::Type::String ? name->text : name->text;
    g.backend_id = integer(pg.find("backend_id")).value_or(-1);
    if (const JsonValue* ranks = pg.find("ranks")) {
      // A list of global ranks, or an object {global rank: group rank}.
      if (ranks->type == JsonValue::Type::Array) {
        for (const JsonValue& r : ranks->items)
          if (const auto v = integer(&r); v && *v >= 0 && *v < (1 << 24))
            g.ranks.push_back(static_cast<int32_t>(*v));
      } else if (ranks->type == JsonValue::Type::Object) {
        for (const std::string& key : ranks->keys)
          if (!key.empty() && key.size() < 8 && std::all_of(key.begin(), key.end(), ::isdigit))
            g.ranks.push_back(static_cast<int32_t>(std::stol(key)));
      }
    }
    if (g.ranks.empty())
      if (const auto size = integer(pg.find("group_size")); size && *size > 0 && *size <= (1 << 20))
        for (int32_t r = 0; r < *size; ++r)
          g.ranks.push_back(r);
    std::sort(g.ranks.begin(), g.ranks.end());
    g.ranks.erase(std::unique(g.ranks.begin(), g.ranks.end()), g.ranks.end());
    process_groups_.push_back(std::move(g));
  }
}

// The group of a collective: the process group its record names (backend id or pg_name), else the world
// (ranks 0..world_size-1 of the record, or of the default group "0").
int32_t EtReader::group_for(const JsonValue* pg, int64_t world_size, const EtNode& n)
{
  std::vector<int32_t> ranks;
  std::string name = "world";
  if (pg != nullptr) {
    std::string key;
    std::optional<int64_t> id;
    if (pg->type == JsonValue::Type::String)
      key = pg->text;
    else if (pg->type == JsonValue::Type::Array && !pg->items.empty() && pg->items[0].type == JsonValue::Type::String)
      key = pg->items[0].text; // (pg_name, pg_desc)
    else
      id = integer(pg);
    for (const ProcessGroup& g : process_groups_)
      if ((!key.empty() && g.name == key) || (id && (g.backend_id == *id || g.name == std::to_string(*id)))) {
        ranks = g.ranks;
        name = "pg:" + g.name;
        break;
      }
  }
  if (ranks.empty()) {
    if (world_size <= 0)
      for (const ProcessGroup& g : process_groups_)
        if (g.name == "0")
          world_size = static_cast<int64_t>(g.ranks.size());
    world_size = std::clamp<int64_t>(world_size, 1, 1 << 20);
    for (int32_t r = 0; r < world_size; ++r)
      ranks.push_back(r);
  }
  if (!std::binary_search(ranks.begin(), ranks.end(), trace_.rank))
    fail(n, "a collective on " + name + " (" + std::to_string(ranks.size()) + " ranks from " +
                std::to_string(ranks.front()) + ") without this trace's rank " + std::to_string(trace_.rank));
  trace_.world_size = std::max<int32_t>(trace_.world_size, ranks.back() + 1);
  const auto [it, added] = group_index_.emplace(ranks, static_cast<int32_t>(trace_.graph.groups.size()));
  if (added)
    trace_.graph.groups.push_back({name, ranks});
  return it->second;
}

// A communication node (c10d::*, record_param_comms, nccl:*): one collective, or a wait, for the whole
// subtree. The parameters come from the record_param_comms node (this one or the first in the subtree):
// its inputs are (tensors, seq, process group, rank, collective name, ..., world size).
void EtReader::emit_comm(size_t index)
{
  const EtNode& n = nodes_[index];
  const EtNode* record = nullptr;
  std::vector<size_t> stack{index};
  while (!stack.empty() && record == nullptr) {
    const size_t i = stack.back();
    stack.pop_back();
    if (nodes_[i].name == "record_param_comms")
      record = &nodes_[i];
    else
      for (auto c = nodes_[i].children.rbegin(); c != nodes_[i].children.rend(); ++c)
        stack.push_back(*c);
  }
  std::string collective;
  const JsonValue* pg = nullptr;
  int64_t world_size = 0;
  if (record != nullptr) {
    const auto& in = record->inputs;
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].value->type == JsonValue::Type::String && in[i].type == "String") {
        collective = in[i].value->text;
        if (i >= 2)
          pg = in[i - 2].value;
        break;
      }
    if (!in.empty())
      world_size = integer(in.back().value).value_or(0);
  }
  if (collective.empty()) { // no record: the name (c10d::allreduce_, nccl:all_reduce)
    collective = n.name.substr(n.name.find(':') + 1);
    collective.erase(0, collective.find_first_not_of(':'));
  }
  std::string key;
  for (const char c : collective)
    if (c != '_')
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::optional<CollectiveOp> op_kind;
  if (key.find("allreduce") != std::string::npos || key == "reduce")
    op_kind = CollectiveOp::AllReduce; // reduce: as all-reduce, the upper bound
  else if (key.find("allgather") != std::string::npos)
    op_kind = CollectiveOp::AllGather;
  else if (key.find("reducescatter") != std::string::npos)
    op_kind = CollectiveOp::ReduceScatter;
  else if (key.find("broadcast") != std::string::npos)
    op_kind = CollectiveOp::Broadcast;
  else if (key.find("alltoall") != std::string::npos)
    op_kind = CollectiveOp::AllToAll;
  // Everything under the node is the collective's own work (NCCL kernel, copies of the gathered output).
  const auto skip_children = [&] {
    for (const size_t c : n.children)
      ignore_subtree(c, "inside a collective");
  };
  if (key == "wait") {
    ++trace_.stats.waits;
    blocking_.insert(blocking_.end(), unwaited_.begin(), unwaited_.end());
    unwaited_.clear();
    return skip_children();
  }
  if (!op_kind) {
    const bool p2p = key.find("send") != std::string::npos || key.find("recv") != std::string::npos;
    trace_.stats.ignored[p2p ? "point-to-point (the peer's trace is not here)"
                             : "collective gputwin does not model (" + printable_excerpt(collective) + ")"][n.name]++;
    return skip_children();
  }
  // Sizes: the record's tensors (inputs: its first argument), else the c10d node's own arguments:
  // allgather_/reduce_scatter_/alltoall_ (and their _base_ forms) take (outputs, inputs, ...), the others
  // (tensors, ...).
  std::vector<EtTensor> ins, outs;
  if (record != nullptr && !record->inputs.empty() && !arg_tensors(*record, record->inputs[0], source_).empty()) {
    ins = arg_tensors(*record, record->inputs[0], source_);
    outs = tensors(*record, record->outputs, source_);
  } else if (!n.inputs.empty()) {
    const bool outputs_first = starts_with(n.name, "c10d::") && *op_kind != CollectiveOp::AllReduce &&
                               *op_kind != CollectiveOp::Broadcast && n.inputs.size() >= 2;
    ins = arg_tensors(n, n.inputs[outputs_first ? 1 : 0], source_);
    if (outputs_first)
      outs = arg_tensors(n, n.inputs[0], source_);
  }
  traces::Op op;
  op.kind = traces::OpKind::Collective;
  op.collective = *op_kind;
  op.id = static_cast<int64_t>(ops_.size());
  op.name = n.name;
  op.stream = 1;
  op.group = group_for(pg, world_size, n);
  op.sequence = sequence_[op.group]++;
  const double members = static_cast<double>(trace_.graph.groups[static_cast<size_t>(op.group)].ranks.size());
  // nccl-tests sizes: all-gather the gathered output, reduce-scatter the whole input, others the buffer.
  switch (*op_kind) {
  case CollectiveOp::AllGather: op.bytes = outs.empty() ? total_bytes(ins) * members : total_bytes(outs); break;
  case CollectiveOp::ReduceScatter: op.bytes = ins.empty() ? total_bytes(outs) * members : total_bytes(ins); break;
  default: op.bytes = ins.empty() ? total_bytes(outs) : total_bytes(ins); break;
  }
  if (last_compute_ >= 0)
    op.deps.push_back(last_compute_);
  ++trace_.stats.collectives;
  trace_.stats.collective_bytes += op.bytes;
  unwaited_.push_back(op.id);
  if (!has_waits_) // no wait recorded anywhere: every collective blocks the compute after it
    blocking_.push_back(op.id);
  ops_.push_back(std::move(op));
  skip_children();
}

void EtReader::ignore_subtree(size_t index, const std::string& reason)
{
  std::vector<size_t> stack{index};
  while (!stack.empty()) {
    const size_t i = stack.back();
    stack.pop_back();
    // An unreadable process-group description is counted as ignored already (read_process_groups); a collective or
    // GEMM-like op it hangs under (found by the chakra fuzz harness: a "gloo:" root) must not count it again.
    if (!(nodes_[i].name == "## process_group:init ##" && unreadable_groups_.count(nodes_[i].id)))
      trace_.stats.ignored[reason][nodes_[i].name]++;
    stack.insert(stack.end(), nodes_[i].children.begin(), nodes_[i].children.end());
  }
}

namespace {

// Communication nodes: one collective (or a wait) for their whole subtree.
bool is_comm_node(std::string_view name)
{
  return starts_with(name, "c10d::") || starts_with(name, "nccl:") || starts_with(name, "gloo:") ||
         name == "record_param_comms";
}

} // namespace

void EtReader::visit(size_t root, traces::Phase root_phase)
{
  std::vector<std::pair<size_t, traces::Phase>> stack{{root, root_phase}};
  while (!stack.empty()) {
    const auto [index, inherited] = stack.back();
    stack.pop_back();
    const EtNode& n = nodes_[index];
    traces::Phase phase = inherited;
    if (starts_with(n.name, "autograd::engine::evaluate_function"))
      phase = traces::Phase::Backward;
    else if (starts_with(n.name, "Optimizer."))
      phase = traces::Phase::Optimizer;
    if (n.name == "## process_group:init ##") {
      if (!unreadable_groups_.count(n.id)) // else counted as ignored
        ++trace_.stats.structure;
      for (const size_t c : n.children)
        ignore_subtree(c, "inside a process group description");
      continue;
    }
    if (is_comm_node(n.name)) {
      emit_comm(index);
      continue;
    }
    if (emit_gemm_like(n, phase)) {
      for (const size_t c : n.children)
        ignore_subtree(c, "inside a GEMM-like op (timed by its FLOPs)");
      continue;
    }
    if (!n.children.empty()) {
      ++trace_.stats.structure;
      for (auto c = n.children.rbegin(); c != n.children.rend(); ++c)
        stack.push_back({*c, phase});
      continue;
    }
    if (starts_with(n.name, "[pytorch|profiler|execution_trace|") || starts_with(n.name, "## ")) {
      ++trace_.stats.structure;
      continue;
    }
    emit_leaf(n, phase);
  }
}

ChakraTrace EtReader::read(std::string_view json_text)
{
  JsonValue root;
  try {
    root = traces::parse_json(json_text);
  } catch (const traces::JsonParseError& e) {
    throw TraceError(source_ + ":" + e.what());
  }
  if (root.type != JsonValue::Type::Object)
    fail("expected a JSON object (a PyTorch execution trace), got " + traces::type_name(root.type));
  trace_.source = source_;
  trace_.input = ChakraInput::PytorchHostJson;
  if (const JsonValue* schema = root.find("schema"); schema != nullptr && schema->type == JsonValue::Type::String)
    trace_.schema = schema->text;
  const JsonValue* list = root.find("nodes");
  if (list == nullptr || list->type != JsonValue::Type::Array)
    fail("no 'nodes' array (expected a PyTorch execution trace)");
  nodes_.reserve(list->items.size());
  for (size_t i = 0; i < list->items.size(); ++i) {
    EtNode n = read_node(list->items[i], i, source_);
    if (!index_of_.emplace(n.id, nodes_.size()).second)
      fail("node " + std::to_string(n.id) + ": duplicate id");
    nodes_.push_back(std::move(n));
  }
  trace_.stats.nodes = static_cast<int64_t>(nodes_.size());
  if (nodes_.empty())
    fail("the 'nodes' array is empty");

  // The tree: a node's parent is its ctrl_deps; roots have none in the file. Program order: rf_id (the order
  // the record functions were entered, over all threads), then id.
  std::vector<size_t> roots;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const auto parent = index_of_.find(nodes_[i].parent);
    if (parent == index_of_.end() || nodes_[i].parent == nodes_[i].id)
      roots.push_back(i);
    else
      nodes_[parent->second].children.push_back(i);
  }
  const auto order = [&](size_t a, size_t b) {
    return std::make_pair(nodes_[a].rf_id, nodes_[a].id) < std::make_pair(nodes_[b].rf_id, nodes_[b].id);
  };
  for (EtNode& n : nodes_)
    std::sort(n.children.begin(), n.children.end(), order);
  std::sort(roots.begin(), roots.end(), order);

  // Before the walk: the process groups, the rank, whether waits are recorded.
  bool rank_found = false;
  for (const EtNode& n : nodes_) {
    if (n.name == "## process_group:init ##")
      read_process_groups(n);
    if (n.name != "record_param_comms")
      continue;
    for (size_t i = 1; i < n.inputs.size(); ++i)
      if (n.inputs[i].type == "String" && n.inputs[i].value->type == JsonValue::Type::String) {
        if (n.inputs[i].value->text == "wait")
          has_waits_ = true;
        else if (!rank_found)
          if (const auto r = integer(n.inputs[i - 1].value); r && *r >= 0 && *r < (1 << 20)) {
            trace_.rank = static_cast<int32_t>(*r);
            rank_found = true;
          }
        break;
      }
  }
  trace_.world_size = trace_.rank + 1;
  for (const ProcessGroup& g : process_groups_)
    if (g.name == "0" && !g.ranks.empty())
      trace_.world_size = std::max(trace_.world_size, g.ranks.back() + 1);

  std::vector<bool> reached(nodes_.size(), false);
  for (const size_t r : roots)
    visit(r, traces::Phase::Forward);
  // Nodes on a ctrl_deps cycle hang under no root.
  int64_t counted = trace_.stats.structure + trace_.stats.compute_ops() + trace_.stats.collectives +
                    trace_.stats.waits + trace_.stats.ignored_nodes();
  if (counted < trace_.stats.nodes)
    trace_.stats.ignored["on a ctrl_deps cycle (under no root)"]["(nodes)"] += trace_.stats.nodes - counted;

  if (ops_.empty())
    fail("none of its " + std::to_string(nodes_.size()) +
         " nodes is GPU work or a collective (expected aten ops on CUDA tensors or c10d collectives)");
  traces::RankProgram program;
  program.rank = trace_.rank;
  program.ops = std::move(ops_);
  trace_.graph.ranks.push_back(std::move(program));
  trace_.graph.metadata["producer"] = "pytorch execution trace";
  trace_.graph.metadata["schema"] = trace_.schema;
  trace_.graph.metadata["source"] = source_;
  return std::move(trace_);
}

bool is_pytorch_et_json(std::string_view text)
{
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] != '{')
    return false;
  // torch.profiler.ExecutionTraceObserver writes "schema" first (a gputwin op graph has no such member).
  return text.substr(0, 4096).find("\"schema\"") != std::string_view::npos;
}

ChakraTrace parse_pytorch_et(std::string_view json_text, const std::string& source)
{
  return EtReader(source).read(json_text);
}

} // namespace gputwin::chakra
