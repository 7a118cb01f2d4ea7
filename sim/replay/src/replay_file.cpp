// A trace file's format told and replayed (replay_file.hpp).
#include "gputwin/sim/replay_file.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/progress_check.hpp"
#include "gputwin/traces/kineto.hpp"
#include "gputwin/traces/trace_io.hpp"

namespace gputwin::sim {

TraceFileReplay replay_trace_file(const ReplayRequest& request)
{
  const std::string& path = request.trace_path;
  traces::OpGraph trace;
  try {
    const std::string text = traces::read_trace_text(path);
    if (traces::is_chrome_trace(text))
      return replay_kineto_step(request, text);
    if (chakra::is_pytorch_et_json(text) || chakra::is_chakra_et_path(path)) // traces/chakra/README.md, "Import"
      return replay_chakra_file(request, text);
    const std::pair<const char*, bool> kineto_only[] = {{"--step", request.step.has_value()},
                                                        {"--comm-scale", request.comm_scale.has_value()}};
    for (const auto& [flag, given] : kineto_only)
      if (given)
        throw InputError(std::string(flag) + ": only for PyTorch profiler (Kineto) traces; " + path +
                         " is a gputwin trace");
    trace = traces::parse_op_graph(text, path);
    check_progress(trace);
  } catch (const traces::TraceError& e) {
    throw InputError(e.what());
  }
  return replay_op_graph(request, std::move(trace));
}

const IterationResult& replay_result(const TraceFileReplay& replay)
{
  return std::visit([](const auto& r) -> const IterationResult& { return r.result; }, replay);
}

int64_t replay_ranks_per_program(const TraceFileReplay& replay)
{
  const auto* op_graph = std::get_if<OpGraphReplay>(&replay);
  return op_graph ? op_graph->ranks_per_program : 1;
}

void write_replay_json(std::ostream& out, const TraceFileReplay& replay)
{
  if (const auto* r = std::get_if<OpGraphReplay>(&replay))
    write_op_graph_replay_json(out, *r);
  else if (const auto* k = std::get_if<KinetoStepReplay>(&replay))
    write_kineto_step_replay_json(out, *k);
  else
    write_chakra_file_replay_json(out, std::get<ChakraFileReplay>(replay));
}

void print_replay(std::ostream& out, const TraceFileReplay& replay)
{
  if (const auto* r = std::get_if<OpGraphReplay>(&replay))
    print_op_graph_replay(out, *r);
  else if (const auto* k = std::get_if<KinetoStepReplay>(&replay))
    print_kineto_step_replay(out, *k);
  else
    print_chakra_file_replay(out, std::get<ChakraFileReplay>(replay));
}

} // namespace gputwin::sim
