// `gputwin calibrate --iterations FILE.csv`: the flags and the table read, the GPU compute model and the
// framework's host costs fitted (sim/calibration/iteration_calibration.hpp), the model file written and the fit
// printed.
#include "commands.hpp"
#include "iteration_cases.hpp"
#include "gputwin/sim/resource_estimate.hpp"
#include "gputwin/sim/resource_flags.hpp"
#include "gputwin/sim/work_estimate.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/common/output_file.hpp"
#include "gputwin/sim/iteration_calibration.hpp"
#include "gputwin/topologies/cluster_flags.hpp"

#include <iostream>
#include <sstream>
#include <thread>

namespace gputwin::cli {

namespace {

// The flags of `gputwin calibrate --iterations`.
ArgParser calibrate_iterations_parser()
{
  ArgParser parser(
      "gputwin calibrate --iterations",
      "Fits the GPU compute model's efficiencies and the framework's host costs to a table of measured\n"
      "iteration times, and reports the k-fold cross-validated error (folds grouped by model: the\n"
      "table's model column, else the shape, hidden size x layers; no model is predicted by a fit that\n"
      "saw it). Rows take the command line's model/plan flags for columns they lack.\n\n"
      "example: gputwin calibrate --iterations ground_truth_single.csv --cluster dgx-a100 \\\n"
      "           --recompute full --schedule 1f1b --vocab 50257 --framework megatron-deepspeed -o v.yaml");
  add_iteration_table_flags(parser);
  parser.add_option("--output", "FILE", "where to write the fitted GPU model + framework (YAML); also -o FILE");
  parser.add_option("--folds", "K", "cross-validation folds (default 5; 1: no cross-validation)");
  parser.add_option("--max-evaluations", "N", "objective evaluations per fit (default 800)");
  parser.add_option("--threads", "N", "threads (default: the machine's cores)");
  sim::add_max_work_flag(parser);
  sim::add_max_memory_flag(parser);
  return parser;
}

// The table, the cluster and the fit's options from the flags; throws InputError for a missing or bad one.
sim::IterationFitRequest fit_request(const ParsedArgs& parsed)
{
  sim::IterationFitRequest request;
  request.table_path = parsed.value("--iterations").value_or("");
  const std::optional<std::string> output = parsed.value("--output");
  if (!output)
    throw InputError("--output: missing (expected -o FILE for the fitted model)");
  request.output_path = *output;
  check_output_flags(parsed, {"--output"}); // before the fit
  CheckedIterationTable checked =
      read_checked_iteration_table(request.table_path, parsed, "the fit of " + request.table_path);
  request.cluster = std::move(checked.cluster);
  request.cases = std::move(checked.cases);
  request.options.folds = static_cast<int>(parsed.integer("--folds").value_or(5));
  request.options.max_evaluations = static_cast<int>(parsed.integer("--max-evaluations").value_or(800));
  if (request.options.folds < 1)
    throw InputError("--folds: expected an integer >= 1");
  if (request.options.max_evaluations < 20)
    throw InputError("--max-evaluations: expected an integer >= 20");
  request.threads = static_cast<int>(
      parsed.integer("--threads").value_or(std::max<unsigned>(1, std::thread::hardware_concurrency())));
  if (request.threads < 1)
    throw InputError("--threads: expected an integer >= 1");
  request.start = {compute_model_for_gpu(parsed, request.cluster.gpu),
                   framework_from_flags(parsed, default_framework_for(request.cluster.gpu.generation))};
  return request;
}

} // namespace

int run_calibrate_iterations(const std::vector<std::string>& args, std::ostream& out)
{
  ArgParser parser = calibrate_iterations_parser();
  ParsedArgs parsed = parser.parse(with_long_output_flag(args));
  // Stated on stderr once the run has succeeded (an error stays one line).
  const std::optional<std::string> attention_note =
      default_attention_for_gpu(parsed, topo::read_cluster(parsed).gpu.generation);
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  const sim::IterationCalibration result = sim::calibrate_iterations(fit_request(parsed));
  std::ostringstream file;
  sim::write_iteration_model_yaml(file, result);
  write_file_atomically(result.output_path, file.str(), "--output");
  if (attention_note)
    std::cerr << "gputwin calibrate: note: " << *attention_note << "\n";
  for (const std::string& note : parsed.notes()) // what --megatron-args noted
    std::cerr << "gputwin calibrate: note: " << note << "\n";
  if (parsed.has("--json"))
    sim::write_iteration_calibration_json(out, result);
  else
    sim::print_iteration_calibration(out, result);
  return 0;
}

} // namespace gputwin::cli
