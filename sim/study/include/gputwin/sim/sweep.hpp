#pragma once
// `gputwin sweep`: the best plan of every (model, cluster, GPU count) point -- the search of simulated_search.hpp at
// each point, the fastest simulated plan kept -- with time to train, GPU-hours and cost.
//
// Scale-out: every point runs in its own forked process (isolated_run.hpp), several at once, its result coming back
// as JSON and collected in point order, so the rows do not depend on how many ran at once. A shard (sweep_shard.hpp)
// runs only its slice of the points; sweep_merge.hpp joins the slices' CSVs.

#include "gputwin/models/framework_profile.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/sim/plan_search.hpp"
#include "gputwin/sim/sweep_csv.hpp"
#include "gputwin/sim/sweep_shard.hpp"
#include "gputwin/sim/work_estimate.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gputwin::sim {

// One cluster of a sweep, with what its points share.
struct SweepCluster {
  std::string name;                                     // as given (a built-in name or a cluster file)
  topo::ClusterSpec node;                               // one node: its name, GPU and node size
  GpuComputeModel gpu;                                  // its GPU's compute model
  AttentionKernel attention = AttentionKernel::Unfused; // of every plan on it
  FrameworkProfile framework;                           // the host that issues each rank's ops
  double price_per_gpu_hour = NAN;                      // the cost of a GPU-hour; NaN for no cost
};

// Every input of a sweep, checked before the first point runs.
struct SweepRequest {
  std::vector<GptConfig> models;
  std::vector<SweepCluster> clusters;
  std::vector<std::string> set_overrides;               // KEY=VALUE applied to every cluster
  std::vector<int64_t> gpu_counts;                      // ascending
  std::optional<int64_t> global_batch;                  // else each point's GPU count
  double tokens = NAN;                                  // tokens to train on (time to train, GPU-hours); NaN for none
  int64_t top = 1;                                      // plans per point confirmed by the full simulation
  int threads_per_point = 1;                            // threads of each point's estimates
  std::optional<std::vector<int64_t>> context_parallel; // else each point's (default_context_parallel)
  SearchSpace space;                                    // precision and overlaps; attention and cp are set per point
  Shard shard;                                          // the slice of the points this run runs
};

// One (model, cluster, GPU count) point: indices into the request's models and clusters.
struct SweepPoint {
  size_t model = 0, cluster = 0;
  int64_t gpus = 0;
};

// The points of a sweep in sweep order (model, then cluster, then GPU count) and the indices of the shard's.
struct SweepPoints {
  std::vector<SweepPoint> all;
  std::vector<size_t> selected;
};

// The points of `request` and its shard's.
SweepPoints sweep_points(const SweepRequest& request);

// A point in messages: "gpt-22b on 16 GPUs of dgx-a100, global batch 16".
std::string describe_point(const SweepRequest& request, const SweepPoint& point);

// The work of the shard's points (a search each), to check (check_work) before the first one runs.
WorkEstimate sweep_work(const SweepRequest& request, const SweepPoints& points);

// The rows of the points that ran and the points skipped.
struct SweepResult {
  std::vector<SweepRow> rows;       // in point order
  std::vector<std::string> skipped; // "POINT: why" (describe_point) where no plan splits or fits, in point order
};

// Runs the shard's points, `jobs` processes at once (a progress bar on stderr with `show_progress`, on a terminal
// only): the best plan of each, with time to train and GPU-hours where the request has tokens, the cost where its
// cluster has a price, and in a whole sweep (not a slice) the scaling efficiency. Throws InputError when no point
// of a whole sweep has a plan that fits: the reason of its one point, or of the last.
SweepResult run_sweep_points(const SweepRequest& request, const SweepPoints& points, int jobs, bool show_progress);

} // namespace gputwin::sim
