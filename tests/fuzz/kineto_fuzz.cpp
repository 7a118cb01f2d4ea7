// The PyTorch profiler (Kineto) reader (traces/kineto.hpp, KINETO.md): gzip through zlib when the input starts with
// the gzip magic (read_trace_text on a file), then parse_kineto; only TraceError is accepted. A trace it returns
// must be a valid op graph (it is replayed as one) with one host entry per op.
#include "fuzz_support.hpp"

#include "gputwin/traces/kineto.hpp"
#include "gputwin/traces/trace_io.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  using namespace gputwin::traces;
  const std::string_view bytes = gputwin::fuzz::as_text(data, size);
  KinetoTrace trace;
  try {
    if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
      const std::string path = gputwin::fuzz::input_file(bytes, "fuzz.json.gz");
      trace = parse_kineto(read_trace_text(path), path);
    } else {
      trace = parse_kineto(bytes, "fuzz.json");
    }
  } catch (const TraceError& e) {
    gputwin::fuzz::check_error_message(e);
    return 0;
  }
  ++gputwin::fuzz::accepted_inputs;
  if (trace.selected >= trace.steps.size())
    gputwin::fuzz::fail("selected step out of range");
  if (trace.graph.ranks.size() != 1)
    gputwin::fuzz::fail("a Kineto op graph without exactly one rank program");
  const size_t ops = trace.graph.ranks[0].ops.size();
  if (trace.host.issue_gap_ns.size() != ops || trace.host.syncs.size() != ops)
    gputwin::fuzz::fail("host timeline and rank program differ in length");
  try {
    validate_op_graph(trace.graph);
  } catch (const TraceError& e) {
    gputwin::fuzz::fail(std::string("the op graph of an accepted Kineto trace does not validate: ") + e.what());
  }
  return 0;
}
