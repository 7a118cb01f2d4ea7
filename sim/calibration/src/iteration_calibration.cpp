// The iteration fit's driver, its model file and reports; the table compared with the twin
// (iteration_calibration.hpp).
#include "gputwin/sim/iteration_calibration.hpp"

#include "gputwin/common/json_writer.hpp"
#include "gputwin/config/framework_yaml.hpp"
#include "gputwin/config/gpu_model_yaml.hpp"
#include "gputwin/models/calibration.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace gputwin::sim {

namespace {

std::vector<HeldOutFold> held_out_folds(const IterationCalibration& result)
{
  const IterationFit& fit = result.fit;
  std::vector<HeldOutFold> folds(static_cast<size_t>(fit.folds));
  for (size_t i = 0; i < result.rows; ++i) {
    HeldOutFold& f = folds[static_cast<size_t>(fit.fold[i])];
    if (("," + f.groups + ",").find("," + fit.shape[i] + ",") == std::string::npos)
      f.groups += (f.groups.empty() ? "" : ",") + fit.shape[i];
    f.predicted_s.push_back(fit.cross_validated_s[i]);
    f.measured_s.push_back(result.measured_s[i]);
  }
  return folds;
}

} // namespace

IterationCalibration calibrate_iterations(IterationFitRequest request)
{
  IterationCalibration result;
  result.table_path = request.table_path;
  result.output_path = request.output_path;
  result.cluster_name = request.cluster.name;
  const auto wall_start = std::chrono::steady_clock::now();
  const IterationSet set(request.cluster, std::move(request.cases), request.threads);
  result.rows = set.cases().size();
  for (const IterationCase& c : set.cases())
    result.measured_s.push_back(c.measured_s);
  result.uncalibrated_mape =
      mean_absolute_percentage_error(set.predict(request.start.gpu, request.start.framework), result.measured_s);
  result.fit = fit_iterations(set, request.start, request.options);
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  result.folds = held_out_folds(result);
  return result;
}

void write_iteration_model_yaml(std::ostream& out, const IterationCalibration& result)
{
  const IterationFit& fit = result.fit;
  Calibration calibration;
  calibration.gpu = fit.fitted.gpu;
  char note[256];
  std::snprintf(note, sizeof note,
                "fit to %zu measured iterations on %s: MAPE %.4f fitted, %.4f %d-fold cross-validated (folds "
                "by model); framework section below",
                result.rows, result.cluster_name.c_str(), fit.fitted_mape, fit.cross_validated_mape, fit.folds);
  calibration.notes.push_back(note);
  config::write_calibration_yaml(out, calibration, {result.table_path});
  out << "# Host issue model (framework_profile.hpp), fitted together with the GPU model above.\nframework:\n";
  config::write_framework_profile(out, fit.fitted.framework, "  ");
}

void write_iteration_calibration_json(std::ostream& out, const IterationCalibration& result)
{
  const IterationFit& fit = result.fit;
  JsonWriter json(out);
  json.begin_object();
  json.field("iterations", result.table_path);
  json.field("cluster", result.cluster_name);
  json.field("rows", static_cast<int64_t>(result.rows));
  json.field("folds", static_cast<int64_t>(fit.folds));
  json.field("uncalibrated_mape", result.uncalibrated_mape);
  json.field("fitted_mape", fit.fitted_mape);
  json.field("cross_validated_mape", fit.cross_validated_mape);
  if (fit.folds > 1) {
    json.key("cross_validation");
    json.begin_array();
    for (const HeldOutFold& f : result.folds) {
      json.begin_object();
      json.field("held_out", f.groups);
      json.field("rows", static_cast<int64_t>(f.measured_s.size()));
      json.field("mape", mean_absolute_percentage_error(f.predicted_s, f.measured_s));
      json.end_object();
    }
    json.end_array();
  }
  json.field("evaluations", static_cast<int64_t>(fit.evaluations));
  json.field("output", result.output_path);
  json.field("wall_time_s", result.wall_s);
  json.end_object();
  out << "\n";
}

void print_iteration_calibration(std::ostream& out, const IterationCalibration& result)
{
  const IterationFit& fit = result.fit;
  char line[256];
  std::snprintf(line, sizeof line, "fitted %zu measured iterations (%s) on %s in %.1f s, %d evaluations\n", result.rows,
                result.table_path.c_str(), result.cluster_name.c_str(), result.wall_s, fit.evaluations);
  out << line;
  std::snprintf(line, sizeof line,
                "  MAPE uncalibrated %.2f %%, fitted %.2f %%, %d-fold cross-validated (folds by model) %.2f %%\n",
                100 * result.uncalibrated_mape, 100 * fit.fitted_mape, fit.folds, 100 * fit.cross_validated_mape);
  out << line;
  if (fit.folds > 1)
    for (const HeldOutFold& f : result.folds) {
      std::snprintf(line, sizeof line, " (%zu rows): MAPE %.2f %%\n", f.measured_s.size(),
                    100 * mean_absolute_percentage_error(f.predicted_s, f.measured_s));
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
  out << line << "  wrote " << result.output_path << "\n";
}

IterationComparison compare_iterations(const std::string& table_path, const topo::ClusterSpec& cluster,
                                       std::vector<IterationCase> cases, const GpuComputeModel& gpu,
                                       const FrameworkProfile& framework, int threads)
{
  IterationComparison comparison;
  comparison.table_path = table_path;
  comparison.cluster_name = cluster.name;
  comparison.framework_name = framework.name;
  const IterationSet set(cluster, std::move(cases), threads);
  comparison.predicted_s = set.predict(gpu, framework);
  comparison.cases = set.cases();
  for (size_t i = 0; i < comparison.predicted_s.size(); ++i) {
    comparison.measured_s.push_back(comparison.cases[i].measured_s);
    comparison.max_absolute_percentage_error = std::max(
        comparison.max_absolute_percentage_error, std::abs(comparison.predicted_s[i] / comparison.measured_s[i] - 1));
  }
  comparison.mean_absolute_percentage_error =
      mean_absolute_percentage_error(comparison.predicted_s, comparison.measured_s);
  return comparison;
}

void write_iteration_comparison_json(std::ostream& out, const IterationComparison& comparison)
{
  const std::vector<double>& predicted = comparison.predicted_s;
  const std::vector<double>& measured = comparison.measured_s;
  JsonWriter json(out);
  json.begin_object();
  json.field("iterations", comparison.table_path);
  json.field("cluster", comparison.cluster_name);
  json.field("framework", comparison.framework_name);
  json.field("rows_compared", static_cast<int64_t>(predicted.size()));
  json.field("mean_absolute_percentage_error", comparison.mean_absolute_percentage_error);
  json.field("max_absolute_percentage_error", comparison.max_absolute_percentage_error);
  json.key("rows");
  json.begin_array();
  for (size_t i = 0; i < predicted.size(); ++i) {
    const IterationCase& c = comparison.cases[i];
    json.begin_object();
    json.field("line", static_cast<int64_t>(c.line));
    json.field("plan", describe_plan(c.plan));
    json.field("overlap_grad_reduce", c.options.overlap_grad_reduce);
    json.field("overlap_param_gather", c.options.overlap_param_gather);
    json.field("tp_comm_overlap", c.options.tp_comm_overlap);
    json.field("hidden", c.model.hidden);
    json.field("layers", c.model.layers);
    json.field("measured_s", measured[i]);
    json.field("simulated_s", predicted[i]);
    json.field("relative_error", predicted[i] / measured[i] - 1);
    json.end_object();
  }
  json.end_array();
  json.end_object();
  out << "\n";
}

void print_iteration_comparison(std::ostream& out, const IterationComparison& comparison)
{
  const std::vector<double>& predicted = comparison.predicted_s;
  const std::vector<double>& measured = comparison.measured_s;
  char line[512];
  std::snprintf(line, sizeof line, "%6s  %-6s %-3s %-72s %12s %12s %8s\n", "line", "h", "L", "plan", "measured ms",
                "twin ms", "error");
  out << line;
  for (size_t i = 0; i < predicted.size(); ++i) {
    const IterationCase& c = comparison.cases[i];
    std::snprintf(line, sizeof line, "%6d  %-6lld %-3lld %-72s %12.2f %12.2f %+7.1f%%\n", c.line,
                  static_cast<long long>(c.model.hidden), static_cast<long long>(c.model.layers),
                  describe_plan(c.plan).substr(0, 72).c_str(), 1e3 * measured[i], 1e3 * predicted[i],
                  100 * (predicted[i] / measured[i] - 1));
    out << line;
  }
  std::snprintf(line, sizeof line, "%zu rows: mean absolute error %.2f %%, worst %.2f %% (framework %s)\n",
                predicted.size(), 100 * comparison.mean_absolute_percentage_error,
                100 * comparison.max_absolute_percentage_error, comparison.framework_name.c_str());
  out << line;
}

} // namespace gputwin::sim
