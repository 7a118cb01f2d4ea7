#pragma once
// What `gputwin replay` was asked, as plain values: the trace file, the cluster to replay it on and the what-if
// changes, plus the front end's resource guards. The replay checks the values against the trace's format
// (replay_file.hpp); a flag named in an error is the command line's spelling of the field.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"
#include "gputwin/sim/trace_workload.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace gputwin::sim {

// The checks a replay makes before it allocates (gputwin's --max-memory guards). Each throws InputError when the
// run would not fit; an empty one checks nothing.
struct ReplayGuards {
  // Replaying `ops` ops of captured programs on a cluster of `gpus` GPUs.
  std::function<void(int64_t gpus, double ops)> programs;
  // The SimGrid platform of a cluster of `gpus` GPUs.
  std::function<void(int64_t gpus)> platform;
  // The generated workload of `plan` on `cluster` (a scaled-out replay), with or without a recorded timeline.
  std::function<void(const topo::ClusterSpec& cluster, const GptConfig& model, const ParallelPlan& plan, bool timeline)>
      simulation;
};

struct ReplayRequest {
  std::string trace_path;                    // the trace file (TRACE)
  std::optional<std::string> cluster;        // --cluster NAME|FILE; default by the trace's device
  std::optional<int64_t> nodes;              // --nodes N (> 0); default: as many as the replay needs
  std::vector<std::string> cluster_sets;     // --set FIELD=VALUE overrides
  std::optional<std::string> gpu;            // --gpu a100|h100|h200: re-target compute
  std::optional<std::string> gpu_model_path; // --gpu-model FILE: re-target compute to a fitted model
  ScaleOut scale;                            // --dp, --pp, --layers, --global-batch
  std::optional<double> compute_scale;       // --compute-scale X (> 0): compute X times faster
  std::optional<double> comm_scale;          // --comm-scale X (> 0): network X times faster (Kineto)
  std::optional<int64_t> step;               // --step N: the Kineto ProfilerStep to replay
  bool timeline = false;                     // record every op's interval (--timeline)
  ReplayGuards guards;
};

} // namespace gputwin::sim
