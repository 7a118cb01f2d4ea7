// `gputwin calibrate TRACE...`: the flags read, the compute model fitted to the traces
// (sim/calibration/trace_calibration.hpp), the model file written and the fit printed.
#include "commands.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/output_file.hpp"
#include "gputwin/config/gpu_model_yaml.hpp"
#include "gputwin/sim/trace_calibration.hpp"

#include <sstream>

namespace gputwin::cli {

int run_calibrate(const std::vector<std::string>& args, std::ostream& out)
{
  for (const std::string& arg : args) // nccl-tests logs: the network/NCCL fit (calibrate_nccl_command.cpp)
    if (arg == "--nccl-tests")
      return run_calibrate_nccl(args, out);
  for (const std::string& arg : args) // measured iteration times: GPU + framework fit (calibrate_iterations_command.cpp)
    if (arg == "--iterations")
      return run_calibrate_iterations(args, out);
  ArgParser parser(
      "gputwin calibrate",
      "Fits the GPU compute model (gemm_efficiency, gemm_k_half, memory_efficiency, kernel_overhead_s) to the\n"
      "measured compute op durations of traces captured by gputwin-engine, and latency + bandwidth to their\n"
      "communication ops; memory-bound kernels per kernel class (layernorm, softmax, gelu, dropout, elementwise,\n"
      "embedding, cross_entropy, optimizer), GEMMs on the nominal model's GEMM table where it has one (h100,\n"
      "h200) beside the analytic curve; prints the fit error per op class, kernel class, op name and collective,\n"
      "and writes the fitted\n"
      "model as YAML. Peak, bandwidth, multiprocessors and tiles stay the nominal GPU's (the efficiencies are\n"
      "relative to them); a CPU's nominal reference is 1e11 FLOP/s, 1e10 B/s, 1 multiprocessor, 1x1 tiles.\n\n"
      "example: gputwin calibrate run.json -o cpu-model.yaml");
  parser.allow_positional("TRACE...", 1 << 20);
  parser.add_option("--output", "FILE", "where to write the fitted model (YAML); also -o FILE");
  parser.add_option("--gpu", "KIND",
                    std::string("nominal model ") + sim::calibration_gpu_choices +
                        " (default: the traces' metadata 'device')");
  const ParsedArgs parsed = parser.parse(with_long_output_flag(args));
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  const std::vector<std::string>& paths = parsed.positional();
  if (paths.empty())
    throw InputError("expected at least one TRACE (see gputwin calibrate --help)");
  const std::optional<std::string> output = parsed.value("--output");
  if (!output || output->empty())
    throw InputError("--output: missing: where to write the fitted model (-o FILE)");
  check_output_flags(parsed, {"--output"}); // before the fit

  const sim::TraceCalibration result = sim::calibrate_traces(paths, parsed.value("--gpu"));
  std::ostringstream yaml;
  config::write_calibration_yaml(yaml, result.calibration, paths);
  write_file_atomically(*output, yaml.str(), "--output");
  sim::print_trace_calibration(out, result);
  out << "wrote " << *output << "\n";
  return 0;
}

} // namespace gputwin::cli
