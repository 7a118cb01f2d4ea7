// `gputwin calibrate --iterations FILE.csv`: the GPU compute model's efficiencies and the framework's host costs
// fitted to measured iteration times, with k-fold cross-validated error (folds grouped by model).
#include "commands.hpp"
#include "iteration_cases.hpp"
#include "resource_estimate.hpp"

#include "gputwin/config/framework_yaml.hpp"
#include "gputwin/config/gpu_model_yaml.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/iteration_fit.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/common/json_writer.hpp"
#include "gputwin/common/output_file.hpp"

#include <chrono>
#include <cstdio>
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
  add_max_work_flag(parser);
  add_max_memory_flag(parser);
  return parser;
}

// What the fit runs on, read from the flags and the table and checked before anything is fitted.
struct FitInputs {
  std::string table_path;                // --iterations
  std::string output_path;               // --output, -o
  topo::ClusterSpec cluster;             // the flags' cluster, sized to the table's largest row
  std::vector<sim::IterationCase> cases; // the table's rows
  sim::FitOptions options;               // --folds, --max-evaluations
  int threads = 1;                       // --threads
  sim::FitParameters start;              // the fit's start: the GPU's compute model, the framework's host costs
};

// The table, the cluster and the fit's options from the flags; throws InputError for a missing or bad one.
FitInputs read_fit_inputs(const ParsedArgs& parsed)
{
  FitInputs inputs;
  inputs.table_path = parsed.value("--iterations").value_or("");
  const std::optional<std::string> output = parsed.value("--output");
  if (!output)
    throw InputError("--output: missing (expected -o FILE for the fitted model)");
  inputs.output_path = *output;
  check_output_flags(parsed, {"--output"}); // before the fit
  CheckedIterationTable checked = read_checked_iteration_table(inputs.table_path, parsed, "the fit of " + inputs.table_path);
  inputs.cluster = std::move(checked.cluster);
  inputs.cases = std::move(checked.cases);

  inputs.options.folds = static_cast<int>(parsed.integer("--folds").value_or(5));
  inputs.options.max_evaluations = static_cast<int>(parsed.integer("--max-evaluations").value_or(800));
  if (inputs.options.folds < 1)
    throw InputError("--folds: expected an integer >= 1");
  if (inputs.options.max_evaluations < 20)
    throw InputError("--max-evaluations: expected an integer >= 20");
  inputs.threads = static_cast<int>(
      parsed.integer("--threads").value_or(std::max<unsigned>(1, std::thread::hardware_concurrency())));
  if (inputs.threads < 1)
    throw InputError("--threads: expected an integer >= 1");
  inputs.start = {compute_model_for_gpu(parsed, inputs.cluster.gpu),
                  framework_from_flags(parsed, default_framework_for(inputs.cluster.gpu.generation))};
  return inputs;
}

// The fit beside what it was fitted to.
struct FitResult {
  size_t rows = 0;                // measured iterations fitted
  std::vector<double> measured_s; // per row
  double uncalibrated_mape = 0;   // the starting point's error
  sim::IterationFit fit;          // on all rows, and each row by the fold that held it out
  double wall_s = 0;              // wall-clock time of the fit
};

// The fit to the measured iterations (their cases moved out of `inputs`), timed on the wall clock.
FitResult fit_measured_iterations(FitInputs& inputs)
{
  FitResult result;
  const auto wall_start = std::chrono::steady_clock::now();
  const sim::IterationSet set(inputs.cluster, std::move(inputs.cases), inputs.threads);
  result.rows = set.cases().size();
  for (const sim::IterationCase& c : set.cases())
    result.measured_s.push_back(c.measured_s);
  result.uncalibrated_mape =
      sim::mean_absolute_percentage_error(set.predict(inputs.start.gpu, inputs.start.framework), result.measured_s);
  result.fit = sim::fit_iterations(set, inputs.start, inputs.options);
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

// The model file: the GPU model as `gputwin calibrate` writes it, then the framework section.
void write_model_file(const FitInputs& inputs, const FitResult& result)
{
  const sim::IterationFit& fit = result.fit;
  std::ostringstream file;
  Calibration calibration;
  calibration.gpu = fit.fitted.gpu;
  char note[256];
  std::snprintf(note, sizeof note,
                "fit to %zu measured iterations on %s: MAPE %.4f fitted, %.4f %d-fold cross-validated (folds "
                "by model); framework section below",
                result.rows, inputs.cluster.name.c_str(), fit.fitted_mape, fit.cross_validated_mape, fit.folds);
  calibration.notes.push_back(note);
  config::write_calibration_yaml(file, calibration, {inputs.table_path});
  file << "# Host issue model (framework_profile.hpp), fitted together with the GPU model above.\nframework:\n";
  config::write_framework_profile(file, fit.fitted.framework, "  ");
  write_file_atomically(inputs.output_path, file.str(), "--output");
}

// A fold's held-out rows: their groups and the error of the fit that did not see them.
struct Fold {
  std::string groups;
  std::vector<double> predicted, measured;
};

std::vector<Fold> held_out_folds(const FitResult& result)
{
  const sim::IterationFit& fit = result.fit;
  std::vector<Fold> folds(static_cast<size_t>(fit.folds));
  for (size_t i = 0; i < result.rows; ++i) {
    Fold& f = folds[static_cast<size_t>(fit.fold[i])];
    if (("," + f.groups + ",").find("," + fit.shape[i] + ",") == std::string::npos)
      f.groups += (f.groups.empty() ? "" : ",") + fit.shape[i];
    f.predicted.push_back(fit.cross_validated_s[i]);
    f.measured.push_back(result.measured_s[i]);
  }
  return folds;
}

// The fit's errors (uncalibrated, fitted, cross-validated and per fold) as JSON.
void write_fit_json(std::ostream& out, const FitInputs& inputs, const FitResult& result, const std::vector<Fold>& folds)
{
  const sim::IterationFit& fit = result.fit;
  JsonWriter json(out);
  json.begin_object();
  json.field("iterations", inputs.table_path);
  json.field("cluster", inputs.cluster.name);
  json.field("rows", static_cast<int64_t>(result.rows));
  json.field("folds", static_cast<int64_t>(fit.folds));
  json.field("uncalibrated_mape", result.uncalibrated_mape);
  json.field("fitted_mape", fit.fitted_mape);
  json.field("cross_validated_mape", fit.cross_validated_mape);
  if (fit.folds > 1) {
    json.key("cross_validation");
    json.begin_array();
    for (const Fold& f : folds) {
      json.begin_object();
      json.field("held_out", f.groups);
      json.field("rows", static_cast<int64_t>(f.measured.size()));
      json.field("mape", sim::mean_absolute_percentage_error(f.predicted, f.measured));
      json.end_object();
    }
    json.end_array();
  }
  json.field("evaluations", static_cast<int64_t>(fit.evaluations));
  json.field("output", inputs.output_path);
  json.field("wall_time_s", result.wall_s);
  json.end_object();
  out << "\n";
}

// The fit's errors and its fitted parameters as text.
void print_fit_table(std::ostream& out, const FitInputs& inputs, const FitResult& result,
                     const std::vector<Fold>& folds)
{
  const sim::IterationFit& fit = result.fit;
  char line[256];
  std::snprintf(line, sizeof line, "fitted %zu measured iterations (%s) on %s in %.1f s, %d evaluations\n", result.rows,
                inputs.table_path.c_str(), inputs.cluster.name.c_str(), result.wall_s, fit.evaluations);
  out << line;
  std::snprintf(line, sizeof line,
                "  MAPE uncalibrated %.2f %%, fitted %.2f %%, %d-fold cross-validated (folds by model) %.2f %%\n",
                100 * result.uncalibrated_mape, 100 * fit.fitted_mape, fit.folds, 100 * fit.cross_validated_mape);
  out << line;
  if (fit.folds > 1)
    for (const Fold& f : folds) {
      std::snprintf(line, sizeof line, " (%zu rows): MAPE %.2f %%\n", f.measured.size(),
                    100 * sim::mean_absolute_percentage_error(f.predicted, f.measured));
      out << "    held out " << f.groups << line;
    }
  const GpuComputeModel& g = fit.fitted.gpu;
  const FrameworkProfile& f = fit.fitted.framework;
  std::snprintf(line, sizeof line, "  GPU: gemm_efficiency %.3f, gemm_k_half %.1f, memory_efficiency %.3f\n",
                g.gemm_efficiency, g.gemm_k_half, g.memory_efficiency);
  out << line;
  std::snprintf(line, sizeof line,
                "  host (us): kernel %.2f, gemm %.2f, collective %.2f, p2p %.2f, micro-batch %.1f, iteration %.1f\n",
                1e6 * f.kernel_issue_s, 1e6 * f.gemm_issue_s, 1e6 * f.collective_issue_s, 1e6 * f.p2p_issue_s,
                1e6 * f.microbatch_issue_s, 1e6 * f.iteration_issue_s);
  out << line << "  wrote " << inputs.output_path << "\n";
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
  FitInputs inputs = read_fit_inputs(parsed);
  const FitResult result = fit_measured_iterations(inputs);
  write_model_file(inputs, result);
  const std::vector<Fold> folds = held_out_folds(result);
  if (attention_note)
    std::cerr << "gputwin calibrate: note: " << *attention_note << "\n";
  for (const std::string& note : parsed.notes()) // what --megatron-args noted
    std::cerr << "gputwin calibrate: note: " << note << "\n";
  if (parsed.has("--json"))
    write_fit_json(out, inputs, result, folds);
  else
    print_fit_table(out, inputs, result, folds);
  return 0;
}

} // namespace gputwin::cli
