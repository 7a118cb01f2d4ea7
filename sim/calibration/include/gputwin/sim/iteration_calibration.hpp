#pragma once
// `gputwin calibrate --iterations` and `gputwin compare --iterations`: the GPU compute model's efficiencies and the
// framework's host costs fitted to a table of measured iteration times, with k-fold cross-validated error (folds
// grouped by model; sim/estimator/iteration_fit.hpp), the fitted model file; and each measured iteration beside
// the twin's estimate with the mean absolute percentage error. Reports as JSON and text.

#include "gputwin/sim/iteration_fit.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace gputwin::sim {

// What a fit runs on: the table's cases on their cluster, from a starting point.
struct IterationFitRequest {
  std::string table_path;           // the table (for the reports and the model file's notes)
  std::string output_path;          // where the model file goes (for the reports)
  topo::ClusterSpec cluster;        // sized to the table's largest row
  std::vector<IterationCase> cases; // the table's rows
  FitParameters start;              // the GPU's compute model and the framework's host costs
  FitOptions options;               // folds, evaluations per fit
  int threads = 1;
};

// A fold's held-out rows: their groups and the error of the fit that did not see them.
struct HeldOutFold {
  std::string groups; // comma-separated
  std::vector<double> predicted_s, measured_s;
};

struct IterationCalibration {
  std::string table_path, output_path, cluster_name;
  size_t rows = 0;                // measured iterations fitted
  std::vector<double> measured_s; // per row
  double uncalibrated_mape = 0;   // the starting point's error
  IterationFit fit;               // on all rows, and each row by the fold that held it out
  std::vector<HeldOutFold> folds; // per fold
  double wall_s = 0;              // wall-clock time of the fit
};

// Fits the request's cases (moved out of it), timed on the wall clock.
IterationCalibration calibrate_iterations(IterationFitRequest request);

// The model file: the fitted GPU model as `gputwin calibrate` writes it, then the framework section.
void write_iteration_model_yaml(std::ostream& out, const IterationCalibration& result);

// The fit's errors (uncalibrated, fitted, cross-validated and per fold) as JSON, and with its fitted parameters
// as text.
void write_iteration_calibration_json(std::ostream& out, const IterationCalibration& result);
void print_iteration_calibration(std::ostream& out, const IterationCalibration& result);

struct IterationComparison {
  std::string table_path, cluster_name, framework_name;
  std::vector<IterationCase> cases;
  std::vector<double> measured_s, predicted_s; // per case
  double mean_absolute_percentage_error = 0, max_absolute_percentage_error = 0;
};

// Each case of the table at `table_path` on `cluster` estimated with `gpu` and `framework` (the contention-free
// executor of `simulate --estimate`) beside its measured time.
IterationComparison compare_iterations(const std::string& table_path, const topo::ClusterSpec& cluster,
                                       std::vector<IterationCase> cases, const GpuComputeModel& gpu,
                                       const FrameworkProfile& framework, int threads);

// The comparison row by row and its errors, as JSON and as a table.
void write_iteration_comparison_json(std::ostream& out, const IterationComparison& comparison);
void print_iteration_comparison(std::ostream& out, const IterationComparison& comparison);

} // namespace gputwin::sim
