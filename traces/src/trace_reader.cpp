#include "gputwin/traces/json_value.hpp"
#include "gputwin/common/json_writer.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>

namespace gputwin::traces {

namespace {

std::string describe(const JsonValue& v)
{
  switch (v.type) {
  case JsonValue::Type::String: {
    std::string quoted = "'";
    quoted += json_escape(v.text.size() > 40 ? v.text.substr(0, 40) + "..." : v.text);
    quoted += "'";
    return quoted;
  }
  case JsonValue::Type::Number: return v.text.size() > 40 ? v.text.substr(0, 40) + "..." : v.text;
  case JsonValue::Type::Bool: return v.boolean ? "true" : "false";
  default: {
    std::string text = v.type == JsonValue::Type::Array || v.type == JsonValue::Type::Object ? "an " : "a ";
    text += type_name(v.type);
    return text;
  }
  }
}

// Typed access to the members of one JSON object; every error names `source`, the position, `where`
// (e.g. "rank 0 op 12") and the field.
class Fields {
public:
  Fields(const JsonValue& object, std::string source, std::string where)
      : object_(object), source_(std::move(source)), where_(std::move(where))
  {
  }

  [[noreturn]] void fail(const JsonValue& at, const std::string& field, const std::string& message) const
  {
    throw TraceError(source_ + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": " + where_ +
                     (where_.empty() ? "" : ": ") + "field '" + json_escape(field) + "': " + message);
  }

  const JsonValue& require(const std::string& field, JsonValue::Type type, const std::string& expected) const
  {
    const JsonValue* v = object_.find(field);
    if (v == nullptr)
      throw TraceError(source_ + ":" + std::to_string(object_.line) + ":" + std::to_string(object_.column) + ": " +
                       where_ + (where_.empty() ? "" : ": ") + "missing field '" + field + "' (expected " + expected +
                       ")");
    if (v->type != type)
      fail(*v, field, "expected " + expected + ", got " + describe(*v));
    return *v;
  }

  int64_t integer(const std::string& field, int64_t min, int64_t max) const
  {
    const std::string expected = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
    const JsonValue& v = require(field, JsonValue::Type::Number, expected);
    const std::optional<int64_t> n = v.as_int64();
    if (!n || *n < min || *n > max)
      fail(v, field, "expected " + expected + ", got " + describe(v));
    return *n;
  }

  double number(const std::string& field) const
  {
    const JsonValue& v = require(field, JsonValue::Type::Number, "a finite number >= 0");
    const std::optional<double> d = v.as_double();
    if (!d || *d < 0)
      fail(v, field, "expected a finite number >= 0, got " + describe(v));
    return *d;
  }

  bool boolean(const std::string& field) const
  {
    return require(field, JsonValue::Type::Bool, "true or false").boolean;
  }

  std::string string(const std::string& field) const
  {
    return require(field, JsonValue::Type::String, "a string").text;
  }

  // Rejects members not in `allowed` (a typo would otherwise be silently ignored).
  void only(std::initializer_list<const char*> allowed, const std::string& why) const
  {
    for (size_t i = 0; i < object_.keys.size(); ++i) {
      bool known = false;
      for (const char* name : allowed)
        known = known || object_.keys[i] == name;
      if (!known)
        fail(object_.items[i], object_.keys[i], "unknown field" + why);
    }
  }

private:
  const JsonValue& object_;
  std::string source_, where_;
};

constexpr int64_t int32_max = std::numeric_limits<int32_t>::max();
constexpr int64_t int64_max = std::numeric_limits<int64_t>::max();

Op read_op(const JsonValue& v, const std::string& source, int32_t rank, size_t index)
{
  const std::string at_index = "rank " + std::to_string(rank) + " op at index " + std::to_string(index);
  if (v.type != JsonValue::Type::Object)
    throw TraceError(source + ":" + std::to_string(v.line) + ":" + std::to_string(v.column) + ": " + at_index +
                     ": expected an op object, got " + describe(v));
  Op op;
  op.id = Fields(v, source, at_index).integer("id", 0, int64_max);
  const Fields f(v, source, "rank " + std::to_string(rank) + " op " + std::to_string(op.id));

  const JsonValue& kind = f.require("kind", JsonValue::Type::String, "compute|collective|send|recv|memcpy");
  const std::optional<OpKind> k = parse_op_kind(kind.text);
  if (!k)
    f.fail(kind, "kind", "expected compute|collective|send|recv|memcpy, got " + describe(kind));
  op.kind = *k;
  const JsonValue& phase = f.require("phase", JsonValue::Type::String, "forward|backward|recompute|optimizer");
  const std::optional<Phase> p = parse_phase(phase.text);
  if (!p)
    f.fail(phase, "phase", "expected forward|backward|recompute|optimizer, got " + describe(phase));
  op.phase = *p;

  op.name = f.string("name");
  op.layer = static_cast<int32_t>(f.integer("layer", -1, int32_max));
  op.micro_batch = static_cast<int32_t>(f.integer("micro_batch", -1, int32_max));
  op.chunk = static_cast<int32_t>(f.integer("chunk", 0, int32_max));
  op.stream = static_cast<int32_t>(f.integer("stream", 0, int32_max));
  op.flops = f.number("flops");
  op.bytes = f.number("bytes");
  if (const JsonValue* gemm = v.find("gemm")) {
    if (gemm->type != JsonValue::Type::Object)
      f.fail(*gemm, "gemm", "expected an object {m, n, k, batch}, got " + describe(*gemm));
    const Fields g(*gemm, source, "rank " + std::to_string(rank) + " op " + std::to_string(op.id) + ": gemm");
    g.only({"m", "n", "k", "batch", "fp8", "precision", "comm_sms", "grouped"},
           " (expected m, n, k, batch, fp8, precision, comm_sms, grouped)");
    op.gemm.m = g.integer("m", 1, int64_max);
    op.gemm.n = g.integer("n", 1, int64_max);
    op.gemm.k = g.integer("k", 1, int64_max);
    op.gemm.batch = g.integer("batch", 1, int64_max);
    // Optional; absent = bf16 operands (every trace written before FP8 GEMMs existed).
    if (gemm->find("fp8") != nullptr && g.boolean("fp8"))
      op.gemm.precision = GemmPrecision::Fp8;
    // Optional; absent = bf16, or FP8 with "fp8": true. The block-scaled formats are named.
    if (const JsonValue* precision = gemm->find("precision")) {
      const std::optional<GemmPrecision> parsed =
          precision->type == JsonValue::Type::String ? parse_gemm_precision(precision->text) : std::nullopt;
      if (!parsed || *parsed == GemmPrecision::Bf16 || *parsed == GemmPrecision::Fp8 ||
          gemm->find("fp8") != nullptr)
        g.fail(*precision, "precision", "expected mxfp8 or nvfp4 (and no \"fp8\"), got " + describe(*precision));
      op.gemm.precision = *parsed;
    }
    if (gemm->find("comm_sms") != nullptr) // optional; absent = every SM
      op.gemm.comm_sms = static_cast<int32_t>(g.integer("comm_sms", 0, 1 << 20));
    if (gemm->find("grouped") != nullptr) // optional; absent = one batched kernel
      op.gemm.grouped = g.boolean("grouped");
  }
  const bool p2p = op.kind == OpKind::Send || op.kind == OpKind::Recv;
  if (op.kind == OpKind::Collective) {
    const JsonValue& c = f.require("collective", JsonValue::Type::String, collective_op_names());
    const std::optional<CollectiveOp> parsed = parse_collective_op(c.text);
    if (!parsed)
      f.fail(c, "collective", "expected " + collective_op_names() + ", got " + describe(c));
    op.collective = *parsed;
    op.group = static_cast<int32_t>(f.integer("group", 0, int32_max));
    f.only({"id", "kind", "name", "phase", "layer", "micro_batch", "chunk", "stream", "flops", "bytes", "gemm",
            "collective", "group", "sequence", "deps", "start_ns", "duration_ns"},
           " for a collective op");
  } else if (p2p) {
    op.peer = static_cast<int32_t>(f.integer("peer", 0, int32_max));
    f.only({"id", "kind", "name", "phase", "layer", "micro_batch", "chunk", "stream", "flops", "bytes", "gemm", "peer",
            "sequence", "deps", "start_ns", "duration_ns"},
           " for a " + kind.text + " op");
  } else {
    f.only({"id", "kind", "name", "phase", "layer", "micro_batch", "chunk", "stream", "flops", "bytes", "gemm", "deps",
            "start_ns", "duration_ns"},
           " for a " + kind.text + " op (communication fields apply to collective/send/recv)");
  }
  if (op.is_communication())
    op.sequence = f.integer("sequence", 0, int64_max);

  const JsonValue& deps = f.require("deps", JsonValue::Type::Array, "an array of op ids");
  for (const JsonValue& d : deps.items) {
    const std::optional<int64_t> id = d.as_int64();
    if (!id || *id < 0)
      f.fail(d, "deps", "expected op ids (integers >= 0), got " + describe(d));
    op.deps.push_back(*id);
  }
  op.start_ns = f.integer("start_ns", -1, int64_max);
  op.duration_ns = f.integer("duration_ns", -1, int64_max);
  return op;
}

OpGraph read_graph(const JsonValue& root, const std::string& source)
{
  if (root.type != JsonValue::Type::Object)
    throw TraceError(source + ":" + std::to_string(root.line) + ":" + std::to_string(root.column) +
                     ": expected a trace object {\"format\": \"" + op_graph_format_name + "\", ...}, got " +
                     describe(root));
  const Fields top(root, source, "");
  const JsonValue& format =
      top.require("format", JsonValue::Type::String, std::string("'") + op_graph_format_name + "'");
  if (format.text != op_graph_format_name)
    top.fail(format, "format", std::string("expected '") + op_graph_format_name + "', got " + describe(format));
  OpGraph graph;
  graph.format_version = static_cast<int>(top.integer("format_version", 0, int32_max));
  if (graph.format_version != op_graph_format_version)
    top.fail(*root.find("format_version"), "format_version",
             "expected " + std::to_string(op_graph_format_version) + " (the version this reader understands), got " +
                 std::to_string(graph.format_version));
  top.only({"format", "format_version", "metadata", "measured_iteration_s", "groups", "ranks"}, "");

  const JsonValue& metadata = top.require("metadata", JsonValue::Type::Object, "an object of strings");
  for (size_t i = 0; i < metadata.keys.size(); ++i) {
    if (metadata.items[i].type != JsonValue::Type::String)
      top.fail(metadata.items[i], "metadata." + metadata.keys[i],
               "expected a string, got " + describe(metadata.items[i]));
    graph.metadata[metadata.keys[i]] = metadata.items[i].text;
  }
  const JsonValue& times = top.require("measured_iteration_s", JsonValue::Type::Array, "an array of seconds");
  for (const JsonValue& t : times.items) {
    const std::optional<double> seconds = t.as_double();
    if (!seconds || *seconds < 0)
      top.fail(t, "measured_iteration_s", "expected seconds (numbers >= 0), got " + describe(t));
    graph.measured_iteration_s.push_back(*seconds);
  }
  const JsonValue& groups = top.require("groups", JsonValue::Type::Array, "an array of communicator groups");
  for (size_t g = 0; g < groups.items.size(); ++g) {
    const JsonValue& group = groups.items[g];
    if (group.type != JsonValue::Type::Object)
      top.fail(group, "groups", "expected a group object {kind, ranks}, got " + describe(group));
    const Fields gf(group, source, "group " + std::to_string(g));
    gf.only({"kind", "ranks"}, " (expected kind, ranks)");
    CommGroup cg;
    cg.kind = gf.string("kind");
    const JsonValue& ranks = gf.require("ranks", JsonValue::Type::Array, "an array of ranks");
    for (const JsonValue& r : ranks.items) {
      const std::optional<int64_t> rank = r.as_int64();
      if (!rank || *rank < 0 || *rank > int32_max)
        gf.fail(r, "ranks", "expected ranks (integers >= 0), got " + describe(r));
      cg.ranks.push_back(static_cast<int32_t>(*rank));
    }
    graph.groups.push_back(std::move(cg));
  }
  const JsonValue& ranks = top.require("ranks", JsonValue::Type::Array, "an array of rank programs");
  for (size_t i = 0; i < ranks.items.size(); ++i) {
    const JsonValue& program = ranks.items[i];
    if (program.type != JsonValue::Type::Object)
      top.fail(program, "ranks", "expected a rank program {rank, ops}, got " + describe(program));
    const Fields pf(program, source, "rank program at index " + std::to_string(i));
    pf.only({"rank", "ops"}, " (expected rank, ops)");
    RankProgram rp;
    rp.rank = static_cast<int32_t>(pf.integer("rank", 0, int32_max));
    const JsonValue& ops = pf.require("ops", JsonValue::Type::Array, "an array of ops");
    rp.ops.reserve(ops.items.size());
    for (size_t k = 0; k < ops.items.size(); ++k)
      rp.ops.push_back(read_op(ops.items[k], source, rp.rank, k));
    graph.ranks.push_back(std::move(rp));
  }
  return graph;
}

} // namespace

OpGraph parse_op_graph(std::string_view json_text, const std::string& source)
{
  JsonValue root;
  try {
    root = parse_json(json_text);
  } catch (const JsonParseError& e) {
    throw TraceError(source + ":" + e.what());
  }
  OpGraph graph = read_graph(root, source);
  try {
    validate_op_graph(graph);
  } catch (const TraceError& e) {
    throw TraceError(source + ": " + e.what());
  }
  return graph;
}

OpGraph read_op_graph_file(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw TraceError(path + ": cannot open the trace file (expected a readable file)");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    throw TraceError(path + ": read failed");
  return parse_op_graph(text.str(), path);
}

} // namespace gputwin::traces
