#pragma once
// Calibration from measured iteration times: the GPU compute model's efficiencies and the framework's host
// costs fitted so that the estimated iterations (iteration_estimate.hpp: the same workload, compute model, host
// model and folded communication as `simulate`) match a table of measured ones. Reported the way a paper
// would: k-fold cross-validated error with folds grouped by model (the case's group: the table's model name, else
// its shape, hidden size x layers), so no model is ever predicted by a fit that saw it. Plain C++ (no SimGrid).
//
// Fitted (in log space, within physical bounds): gemm_efficiency, gemm_k_half, memory_efficiency (GPU);
// kernel_issue_s, gemm_issue_s, collective_issue_s, p2p_issue_s, microbatch_issue_s, iteration_issue_s
// (framework). Kept as given: peaks, bandwidths, tiles, kernel_overhead_s, launch_latency_s, the host's
// synchronisation points, and the network (calibrate that with --nccl-tests).
// Objective: the mean absolute log error |ln(predicted / measured)|, robust to the odd noisy row;
// minimised by Nelder-Mead from the given parameters (deterministic).

#include "gputwin/models/framework_profile.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/models/parallel_plan.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <memory>
#include <string>
#include <vector>

namespace gputwin::sim {

struct IterationCase {
  int line = 0; // of the table row
  GptConfig model;
  ParallelPlan plan;
  WorkloadOptions options; // the overlaps the workload runs with
  // The cross-validation group: the model's name where the table names one (a `model` column), else empty (the
  // case is grouped by its shape, hidden x layers).
  std::string group;
  double measured_s = 0;
};

// The cases compiled once (workloads, op graphs, communication times), timed for any parameters.
class IterationSet {
public:
  // REQUIRES: every case's plan fits on `cluster` (tp x pp x dp <= its GPUs).
  IterationSet(const topo::ClusterSpec& cluster, std::vector<IterationCase> cases, int threads = 2);
  ~IterationSet();

  const std::vector<IterationCase>& cases() const;
  // Estimated iteration time of each case in `subset` (all cases when empty), in subset order.
  std::vector<double> predict(const GpuComputeModel& gpu, const FrameworkProfile& framework,
                              const std::vector<size_t>& subset = {}) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct FitParameters {
  GpuComputeModel gpu;
  FrameworkProfile framework;
};

struct IterationFit {
  FitParameters fitted;         // on all rows
  std::vector<double> predicted_s;      // per case, with `fitted`
  std::vector<double> cross_validated_s; // per case, by the fold that held it out
  std::vector<int> fold;                 // per case
  std::vector<std::string> shape;        // per case: its group, the model's name or its shape ("h1024 L24")
  double fitted_mape = 0, cross_validated_mape = 0;
  int folds = 0, evaluations = 0;
};

struct FitOptions {
  int folds = 5;
  int max_evaluations = 800; // per fit (restarted Nelder-Mead)
};

// Mean of |predicted - measured| / measured.
double mean_absolute_percentage_error(const std::vector<double>& predicted, const std::vector<double>& measured);

IterationFit fit_iterations(const IterationSet& set, const FitParameters& start, const FitOptions& options = {});

} // namespace gputwin::sim
