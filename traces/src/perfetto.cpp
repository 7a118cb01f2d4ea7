#include "gputwin/traces/perfetto.hpp"

#include "gputwin/common/json_writer.hpp"
#include "gputwin/common/output_file.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <set>

namespace gputwin::traces {

namespace {

void metadata_event(JsonWriter& json, const char* name, int32_t pid, int32_t tid, const std::string& label)
{
  json.begin_object();
  json.field("name", name);
  json.field("ph", "M");
  json.field("pid", pid);
  json.field("tid", tid);
  json.key("args");
  json.begin_object();
  json.field("name", label);
  json.end_object();
  json.end_object();
}

void op_event(JsonWriter& json, int32_t rank, const Op& op, const OpGraph& graph)
{
  json.begin_object();
  json.field("name", op.name);
  json.field("cat", to_string(op.kind) + "," + to_string(op.phase));
  json.field("ph", "X");
  json.field("pid", rank);
  json.field("tid", op.stream);
  // Trace-event timestamps are microseconds; fractions keep nanosecond resolution.
  json.field("ts", static_cast<double>(op.start_ns) / 1e3);
  json.field("dur", static_cast<double>(op.duration_ns) / 1e3);
  json.key("args");
  json.begin_object();
  json.field("id", op.id);
  json.field("phase", to_string(op.phase));
  json.field("layer", op.layer);
  json.field("micro_batch", op.micro_batch);
  json.field("chunk", op.chunk);
  json.field("flops", op.flops);
  json.field("bytes", op.bytes);
  if (op.kind == OpKind::Collective) {
    json.field("collective", to_string(op.collective));
    json.field("group", graph.groups[static_cast<size_t>(op.group)].kind + " #" + std::to_string(op.group));
  }
  if (op.kind == OpKind::Send || op.kind == OpKind::Recv)
    json.field("peer", op.peer);
  if (op.is_communication())
    json.field("sequence", op.sequence);
  json.end_object();
  json.end_object();
}

} // namespace

int64_t write_perfetto_trace(std::ostream& out, const OpGraph& graph)
{
  int64_t unmeasured = 0;
  JsonWriter json(out, 0);
  json.begin_object();
  json.field("displayTimeUnit", "ns");
  json.key("otherData");
  json.begin_object();
  for (const auto& [key, value] : graph.metadata)
    json.field(key, value);
  json.end_object();
  json.key("traceEvents");
  json.begin_array();
  for (const RankProgram& program : graph.ranks) {
    metadata_event(json, "process_name", program.rank, 0, "rank " + std::to_string(program.rank));
    std::set<int32_t> streams;
    for (const Op& op : program.ops)
      streams.insert(op.stream);
    for (const int32_t s : streams)
      metadata_event(json, "thread_name", program.rank, s, "stream " + std::to_string(s));
    for (const Op& op : program.ops) {
      if (op.start_ns < 0 || op.duration_ns < 0) {
        ++unmeasured;
        continue;
      }
      op_event(json, program.rank, op, graph);
    }
  }
  json.end_array();
  json.end_object();
  out << '\n';
  return unmeasured;
}

int64_t write_perfetto_trace_file(const std::string& path, const OpGraph& graph)
{
  int64_t unmeasured = 0;
  write_file_atomically(path, [&](std::ostream& out) { unmeasured = write_perfetto_trace(out, graph); });
  return unmeasured;
}

} // namespace gputwin::traces
