#include "gputwin/sim/chrome_timeline.hpp"

#include "gputwin/common/json_writer.hpp"
#include "gputwin/common/output_file.hpp"

#include <set>

namespace gputwin::sim {

namespace {
const char* stream_name(int32_t stream)
{
  switch (stream) {
  case 0: return "compute";
  case 1: return "pipeline recv";
  case 2: return "pipeline send";
  case 3: return "data-parallel";
  case 4: return "tensor-parallel (async)";
  case 5: return "context-parallel ring";
  case 6: return "parameter all-gather";
  case 7: return "expert-parallel all-to-all"; // ep_stream: a combined 1F1B step's token exchanges
  default: return "stream";
  }
}
} // namespace

void write_chrome_timeline(std::ostream& out, const sim::IterationResult& result, int64_t ranks_per_program,
                           const std::vector<CounterTrack>& counters)
{
  JsonWriter json(out, 0);
  json.begin_object();
  json.field("displayTimeUnit", "ms");
  json.key("traceEvents");
  json.begin_array();
  for (size_t p = 0; p < result.programs.size(); ++p) {
    json.begin_object();
    json.field("ph", "M");
    json.field("name", "process_name");
    json.field("pid", static_cast<int64_t>(p));
    json.key("args");
    json.begin_object();
    json.field("name",
               "stage " + std::to_string(p) + ": rank " + std::to_string(result.programs[p].rank) +
                   (ranks_per_program > 1 ? " (stands for " + std::to_string(ranks_per_program) + " ranks)" : ""));
    json.end_object();
    json.end_object();
    std::set<int32_t> streams = {0, 1, 2, 3, 4}; // and any other stream the program uses
    for (const traces::Op& op : result.programs[p].ops)
      streams.insert(op.stream);
    for (const int32_t stream : streams) {
      json.begin_object();
      json.field("ph", "M");
      json.field("name", "thread_name");
      json.field("pid", static_cast<int64_t>(p));
      json.field("tid", stream);
      json.key("args");
      json.begin_object();
      json.field("name", stream_name(stream));
      json.end_object();
      json.end_object();
    }
  }
  for (const sim::OpSlice& slice : result.timeline) {
    const traces::Op& op = result.programs[static_cast<size_t>(slice.program)].ops[static_cast<size_t>(slice.op)];
    json.begin_object();
    json.field("ph", "X");
    json.field("name", op.name);
    json.field("cat", to_string(op.kind));
    json.field("pid", slice.program);
    json.field("tid", op.stream);
    json.field("ts", slice.start_s * 1e6);
    json.field("dur", (slice.end_s - slice.start_s) * 1e6);
    json.key("args");
    json.begin_object();
    json.field("phase", to_string(op.phase));
    json.field("layer", op.layer);
    json.field("micro_batch", op.micro_batch);
    json.field("chunk", op.chunk);
    if (op.flops > 0)
      json.field("flops", op.flops);
    json.field("bytes", op.bytes);
    json.end_object();
    json.end_object();
  }
  if (!counters.empty()) {
    const int64_t pid = static_cast<int64_t>(result.programs.size());
    json.begin_object();
    json.field("ph", "M");
    json.field("name", "process_name");
    json.field("pid", pid);
    json.key("args");
    json.begin_object();
    json.field("name", "link utilisation (busiest links; each flow at its average rate, / effective bandwidth)");
    json.end_object();
    json.end_object();
    for (const CounterTrack& track : counters)
      for (const auto& [time_s, value] : track.steps) {
        json.begin_object();
        json.field("ph", "C");
        json.field("name", track.name);
        json.field("pid", pid);
        json.field("ts", time_s * 1e6);
        json.key("args");
        json.begin_object();
        json.field("utilisation", value);
        json.end_object();
        json.end_object();
      }
  }
  json.end_array();
  json.end_object();
  out << '\n';
}

void write_chrome_timeline_file(const std::string& path, const sim::IterationResult& result, int64_t ranks_per_program,
                                const std::vector<CounterTrack>& counters)
{
  write_file_atomically(
      path, [&](std::ostream& out) { write_chrome_timeline(out, result, ranks_per_program, counters); }, "--timeline");
}

} // namespace gputwin::sim
