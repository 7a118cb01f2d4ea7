// The Chakra import readers (traces/chakra/chakra_reader.hpp, traces/chakra/README.md "Import"): input that starts
// with '{' (after whitespace) goes to parse_pytorch_et (the PyTorch host execution trace, JSON), anything else to
// parse_chakra_et (length-delimited protobuf ET); only TraceError is accepted. A trace either returns must account
// for every node once, carry finite FLOPs and bytes, and -- the host ET, always one rank -- pass the replay's
// check (sim::check_chakra_graph); a protobuf ET of one file may fail that check only with a TraceError (a message
// to a rank whose file is not there).
#include "fuzz_support.hpp"

#include "gputwin/chakra/chakra_reader.hpp"
#include "gputwin/sim/chakra_replay.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <cmath>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  using namespace gputwin;
  const std::string_view bytes = fuzz::as_text(data, size);
  const size_t first = bytes.find_first_not_of(" \t\r\n");
  const bool json = first != std::string_view::npos && bytes[first] == '{';
  chakra::ChakraTrace trace;
  try {
    trace = json ? chakra::parse_pytorch_et(bytes, "fuzz.json") : chakra::parse_chakra_et(bytes, "fuzz.0.et", 0);
  } catch (const traces::TraceError& e) {
    fuzz::check_error_message(e);
    return 0;
  }
  ++fuzz::accepted_inputs;
  const chakra::ChakraImportStats& s = trace.stats;
  if (trace.graph.ranks.size() != 1 || trace.graph.ranks[0].ops.empty())
    fuzz::fail("an accepted Chakra trace without exactly one non-empty rank program");
  if (json && s.structure + s.compute_ops() + s.collectives + s.waits + s.ignored_nodes() != s.nodes)
    fuzz::fail("host ET nodes not accounted for exactly once");
  for (const traces::Op& op : trace.graph.ranks[0].ops)
    if (!std::isfinite(op.flops) || !std::isfinite(op.bytes) || op.flops < 0 || op.bytes < 0)
      fuzz::fail("an op with FLOPs or bytes not finite and >= 0: " + op.name);
  try {
    sim::check_chakra_graph(trace.graph);
  } catch (const traces::TraceError& e) {
    if (json)
      fuzz::fail(std::string("the op graph of an accepted host ET does not validate: ") + e.what());
    fuzz::check_error_message(e);
  }
  return 0;
}
