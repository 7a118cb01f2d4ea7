#include "gputwin/common/json_writer.hpp"
#include "gputwin/common/output_file.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <sstream>

namespace gputwin::traces {

namespace {

// One op as a single-line JSON object. Fields that do not apply to the op's kind are left out
// (FORMAT.md lists which kind carries which field), so reading and writing again gives the same bytes.
std::string op_line(const Op& op)
{
  std::ostringstream text;
  JsonWriter json(text, 0);
  json.begin_object();
  json.field("id", op.id);
  json.field("kind", to_string(op.kind));
  json.field("name", op.name);
  json.field("phase", to_string(op.phase));
  json.field("layer", op.layer);
  json.field("micro_batch", op.micro_batch);
  json.field("chunk", op.chunk);
  json.field("stream", op.stream);
  json.field("flops", op.flops);
  json.field("bytes", op.bytes);
  if (op.gemm.m > 0 || op.gemm.n > 0 || op.gemm.k > 0) {
    json.key("gemm");
    json.begin_object();
    json.field("m", op.gemm.m);
    json.field("n", op.gemm.n);
    json.field("k", op.gemm.k);
    json.field("batch", op.gemm.batch);
    // Written only when not bf16: a bf16 GEMM's line is what it was before the field existed; FP8 as "fp8": true
    // (every trace with FP8 GEMMs before the block-scaled formats), the block-scaled formats by name.
    if (op.gemm.precision == GemmPrecision::Fp8)
      json.field("fp8", true);
    else if (op.gemm.precision != GemmPrecision::Bf16)
      json.field("precision", to_string(op.gemm.precision));
    if (op.gemm.comm_sms > 0) // likewise
      json.field("comm_sms", static_cast<int64_t>(op.gemm.comm_sms));
    if (op.gemm.grouped) // likewise
      json.field("grouped", true);
    json.end_object();
  }
  if (op.kind == OpKind::Collective) {
    json.field("collective", to_string(op.collective));
    json.field("group", op.group);
  }
  if (op.kind == OpKind::Send || op.kind == OpKind::Recv)
    json.field("peer", op.peer);
  if (op.is_communication())
    json.field("sequence", op.sequence);
  json.key("deps");
  json.begin_array();
  for (const int64_t dep : op.deps)
    json.value(dep);
  json.end_array();
  json.field("start_ns", op.start_ns);
  json.field("duration_ns", op.duration_ns);
  json.end_object();
  return text.str();
}

std::string compact(const auto& write)
{
  std::ostringstream text;
  JsonWriter json(text, 0);
  write(json);
  return text.str();
}

} // namespace

void write_op_graph(std::ostream& out, const OpGraph& graph)
{
  out << "{\"format\":\"" << op_graph_format_name << "\",\"format_version\":" << graph.format_version << ",\n";
  out << "\"metadata\":" << compact([&](JsonWriter& json) {
    json.begin_object();
    for (const auto& [key, value] : graph.metadata)
      json.field(key, value);
    json.end_object();
  }) << ",\n";
  out << "\"measured_iteration_s\":" << compact([&](JsonWriter& json) {
    json.begin_array();
    for (const double seconds : graph.measured_iteration_s)
      json.value(seconds);
    json.end_array();
  }) << ",\n";
  out << "\"groups\":[";
  for (size_t g = 0; g < graph.groups.size(); ++g) {
    out << (g ? ",\n" : "\n") << compact([&](JsonWriter& json) {
      json.begin_object();
      json.field("kind", graph.groups[g].kind);
      json.key("ranks");
      json.begin_array();
      for (const int32_t r : graph.groups[g].ranks)
        json.value(r);
      json.end_array();
      json.end_object();
    });
  }
  out << "],\n\"ranks\":[";
  for (size_t r = 0; r < graph.ranks.size(); ++r) {
    const RankProgram& program = graph.ranks[r];
    out << (r ? ",\n" : "\n") << "{\"rank\":" << program.rank << ",\"ops\":[";
    for (size_t i = 0; i < program.ops.size(); ++i)
      out << (i ? ",\n" : "\n") << op_line(program.ops[i]);
    out << "]}";
  }
  out << "]}\n";
}

std::string op_graph_to_json(const OpGraph& graph)
{
  std::ostringstream out;
  write_op_graph(out, graph);
  return out.str();
}

void write_op_graph_file(const std::string& path, const OpGraph& graph)
{
  write_file_atomically(path, [&graph](std::ostream& out) { write_op_graph(out, graph); });
}

} // namespace gputwin::traces
