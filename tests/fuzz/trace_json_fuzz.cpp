// The trace reader (traces/trace_io.hpp, FORMAT.md): parse_op_graph either returns a graph that validates or
// throws TraceError. A graph it returns must write and read back to the same bytes (write -> read -> write is
// byte-identical, FORMAT.md), and convert to Perfetto.
#include "fuzz_support.hpp"

#include "gputwin/traces/perfetto.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  using namespace gputwin::traces;
  OpGraph graph;
  try {
    graph = parse_op_graph(gputwin::fuzz::as_text(data, size), "fuzz.trace.json");
  } catch (const TraceError& e) {
    gputwin::fuzz::check_error_message(e);
    return 0;
  }
  ++gputwin::fuzz::accepted_inputs;
  const std::string written = op_graph_to_json(graph);
  std::string rewritten;
  try {
    rewritten = op_graph_to_json(parse_op_graph(written, "rewritten.trace.json"));
  } catch (const TraceError& e) {
    gputwin::fuzz::fail(std::string("a graph the reader accepted does not read back after writing: ") + e.what());
  }
  if (rewritten != written)
    gputwin::fuzz::fail("write -> read -> write is not byte-identical");
  std::ostringstream perfetto;
  write_perfetto_trace(perfetto, graph);
  return 0;
}
