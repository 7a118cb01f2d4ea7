// `gputwin calibrate --iterations FILE.csv`: the GPU compute model's efficiencies and the framework's host costs
// fitted to measured iteration times, with k-fold cross-validated error (folds grouped by model).
#include "commands.hpp"
#include "iteration_cases.hpp"

#include "gputwin/config/framework_yaml.hpp"
#include "gputwin/config/gpu_model_yaml.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/iteration_fit.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/traces/json_writer.hpp"
#include "gputwin/traces/output_file.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <thread>

namespace gputwin::cli {

int run_calibrate_iterations(const std::vector<std::string>& args, std::ostream& out)
{
  ArgParser parser("gputwin calibrate --iterations",
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
  ParsedArgs parsed = parser.parse(with_long_output_flag(args));
  // Stated on stderr once the run has succeeded (an error stays one line).
  const std::optional<std::string> attention_note =
      default_attention_for_gpu(parsed, topo::read_cluster(parsed).gpu.generation);
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  const std::string table_path = parsed.value("--iterations").value_or("");
  const std::optional<std::string> output = parsed.value("--output");
  if (!output)
    throw InputError("--output: missing (expected -o FILE for the fitted model)");
  const IterationTable table = read_iteration_table(table_path);
  const topo::ClusterSpec cluster = iteration_cluster(table, parsed);
  std::vector<sim::IterationCase> cases = iteration_cases(table, parsed, cluster);

  sim::FitOptions options;
  options.folds = static_cast<int>(parsed.integer("--folds").value_or(5));
  options.max_evaluations = static_cast<int>(parsed.integer("--max-evaluations").value_or(800));
  if (options.folds < 1)
    throw InputError("--folds: expected an integer >= 1");
  if (options.max_evaluations < 20)
    throw InputError("--max-evaluations: expected an integer >= 20");
  const int threads = static_cast<int>(
      parsed.integer("--threads").value_or(std::max<unsigned>(1, std::thread::hardware_concurrency())));
  if (threads < 1)
    throw InputError("--threads: expected an integer >= 1");
  const sim::FitParameters start{compute_model_for_gpu(parsed, cluster.gpu),
                                   framework_from_flags(parsed, default_framework_for(cluster.gpu.generation))};

  const auto wall_start = std::chrono::steady_clock::now();
  const sim::IterationSet set(cluster, std::move(cases), threads);
  std::vector<double> measured;
  for (const sim::IterationCase& c : set.cases())
    measured.push_back(c.measured_s);
  const double uncalibrated_mape = sim::mean_absolute_percentage_error(set.predict(start.gpu, start.framework), measured);
  const sim::IterationFit fit = sim::fit_iterations(set, start, options);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  // The model file: the GPU model as `gputwin calibrate` writes it, then the framework section.
  std::ostringstream file;
  Calibration calibration;
  calibration.gpu = fit.fitted.gpu;
  char note[256];
  std::snprintf(note, sizeof note,
                "fit to %zu measured iterations on %s: MAPE %.4f fitted, %.4f %d-fold cross-validated (folds "
                "by model); framework section below",
                set.cases().size(), cluster.name.c_str(), fit.fitted_mape, fit.cross_validated_mape, fit.folds);
  calibration.notes.push_back(note);
  config::write_calibration_yaml(file, calibration, {table_path});
  file << "# Host issue model (framework_profile.hpp), fitted together with the GPU model above.\nframework:\n";
  config::write_framework_profile(file, fit.fitted.framework, "  ");
  write_file_atomically(*output, file.str(), "--output");

  // Each fold's held-out rows: their groups and the error of the fit that did not see them.
  struct Fold {
    std::string groups;
    std::vector<double> predicted, measured;
  };
  std::vector<Fold> folds(static_cast<size_t>(fit.folds));
  for (size_t i = 0; i < set.cases().size(); ++i) {
    Fold& f = folds[static_cast<size_t>(fit.fold[i])];
    if (("," + f.groups + ",").find("," + fit.shape[i] + ",") == std::string::npos)
      f.groups += (f.groups.empty() ? "" : ",") + fit.shape[i];
    f.predicted.push_back(fit.cross_validated_s[i]);
    f.measured.push_back(measured[i]);
  }
  if (attention_note)
    std::cerr << "gputwin calibrate: note: " << *attention_note << "\n";
  if (parsed.has("--json")) {
    traces::JsonWriter json(out);
    json.begin_object();
    json.field("iterations", table_path);
    json.field("cluster", cluster.name);
    json.field("rows", static_cast<int64_t>(set.cases().size()));
    json.field("folds", static_cast<int64_t>(fit.folds));
    json.field("uncalibrated_mape", uncalibrated_mape);
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
    json.field("output", *output);
    json.field("wall_time_s", wall_s);
    json.end_object();
    out << "\n";
    return 0;
  }
  char line[256];
  std::snprintf(line, sizeof line, "fitted %zu measured iterations (%s) on %s in %.1f s, %d evaluations\n",
                set.cases().size(), table_path.c_str(), cluster.name.c_str(), wall_s, fit.evaluations);
  out << line;
  std::snprintf(line, sizeof line,
                "  MAPE uncalibrated %.2f %%, fitted %.2f %%, %d-fold cross-validated (folds by model) %.2f %%\n",
                100 * uncalibrated_mape, 100 * fit.fitted_mape, fit.folds, 100 * fit.cross_validated_mape);
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
  out << line << "  wrote " << *output << "\n";
  return 0;
}

} // namespace gputwin::cli
