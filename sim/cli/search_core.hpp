#pragma once
// The core shared by `gputwin search` and `gputwin sweep`: the fitting plans of one (model, cluster, GPUs)
// point ranked by the fast estimator, the best K confirmed by the full flow-level simulation (each in a forked
// child: SimGrid builds one platform per process), ranked by simulated time.

#include "gputwin/models/framework_profile.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/common/arg_parser.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/sim/iteration_report.hpp"
#include "gputwin/sim/plan_search.hpp"
#include "gputwin/topologies/cluster_graph.hpp"
#include "gputwin/topologies/cluster_spec.hpp"
#include "gputwin/common/json_writer.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gputwin::cli {

// One plan confirmed by the full simulation.
struct SimulatedCandidate {
  sim::PlanEstimate estimate;
  sim::IterationReport report; // of the full simulation
};

// A simulated candidate of `model` as one JSON object, and back (the plan through plan_metadata, the report as
// iteration_report_json): how a sweep point's process answers. The reader throws std::runtime_error on anything
// it did not write.
std::string simulated_candidate_json(const GptConfig& model, const SimulatedCandidate& candidate);
SimulatedCandidate parse_simulated_candidate_json(const std::string& json);

// Ranks `fitting` with the fast estimator (`jobs` threads), simulates the best `top` in full and returns them
// fastest (simulated) first. `command` names the subcommand in error messages ("search"); `show_progress`
// enables the progress bars (progress.hpp: on a terminal only) of the estimates and of the simulations. With
// `ruled_out`, how many plans rank_plans ruled out by their compute alone (never estimated).
std::vector<SimulatedCandidate> rank_and_simulate(const topo::ClusterSpec& cluster, const topo::ClusterGraph& graph,
                                                  const GptConfig& model,
                                                  const std::vector<sim::PlanCandidate>& fitting,
                                                  const GpuComputeModel& gpu, const FrameworkProfile& framework,
                                                  int jobs, size_t top, const char* command, bool show_progress,
                                                  size_t* ruled_out = nullptr);

// What `search` and `goodput --search` read from their flags: the job and the plans a search considers.
struct SearchRequest {
  int64_t gpus = 0, global_batch = 0;
  size_t top = 0;
  int jobs = 1;
  topo::ClusterSpec cluster; // sized to the GPUs unless --nodes was given
  GpuComputeModel gpu;
  sim::PlanEnumeration plans; // at least one plan fits
};

// Reads --gpus (required: `gpus_required` ends its error), --global-batch (default: the GPUs), --top (default
// `default_top`), --jobs, --attention, --cp (default: sim::default_context_parallel), --fp8 / --precision, --no-overlaps,
// --micro-batches (where the command has it), the cluster and GPU-model flags, and enumerates the plans of `model`. InputError naming the flag for a bad value, GPUs that are not whole nodes,
// no plan that splits over the GPUs, or none that fits (with the smallest plan's memory against the GPU's).
SearchRequest read_search_request(const ParsedArgs& parsed, const GptConfig& model, int64_t default_top,
                                  const std::string& gpus_required);

// Bytes as GiB with one decimal ("74.3").
std::string gib(int64_t bytes);

} // namespace gputwin::cli
