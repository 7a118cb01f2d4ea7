#include "commands.hpp"

#include "gputwin/common/arg_parser.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/traces/perfetto.hpp"
#include "gputwin/traces/trace_io.hpp"

namespace gputwin::engine::cli {

int run_trace_to_perfetto(const std::vector<std::string>& args, std::ostream& out)
{
  gputwin::cli::ArgParser parser("gputwin-engine trace-to-perfetto",
                                 "convert a gputwin trace (traces/FORMAT.md) to Chrome trace-event JSON");
  parser.allow_positional("IN OUT", 2);
  const gputwin::cli::ParsedArgs parsed = parser.parse(args);
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  if (parsed.positional().size() != 2)
    throw InputError("expected two arguments, the trace to read and the file to write (IN OUT)");
  const traces::OpGraph graph = traces::read_op_graph_file(parsed.positional()[0]);
  const int64_t unmeasured = traces::write_perfetto_trace_file(parsed.positional()[1], graph);
  out << "wrote " << parsed.positional()[1] << " (open it in ui.perfetto.dev)";
  if (unmeasured > 0)
    out << "; " << unmeasured << " ops without measured times left out";
  out << "\n";
  return 0;
}

} // namespace gputwin::engine::cli
