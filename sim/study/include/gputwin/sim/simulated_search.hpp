#pragma once
// The plan search of `gputwin search`, `gputwin sweep` (at each point) and `gputwin goodput --search`: the fitting
// plans of one (model, cluster, GPUs) job ranked by the fast estimator (plan_search.hpp), the best K confirmed by the
// full flow-level simulation -- each in a forked child (isolated_run.hpp: SimGrid builds one platform per process),
// its report coming back as JSON -- and ranked by simulated time.

#include "gputwin/models/framework_profile.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/sim/iteration_report.hpp"
#include "gputwin/sim/plan_search.hpp"
#include "gputwin/topologies/cluster_graph.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gputwin::sim {

// One plan confirmed by the full simulation.
struct SimulatedCandidate {
  PlanEstimate estimate;
  IterationReport report; // of the full simulation
};

// A simulated candidate of `model` as one JSON object, and back (the plan through plan_metadata, the report as
// iteration_report_json): how a sweep point's process answers. The reader throws std::runtime_error on anything
// it did not write.
std::string simulated_candidate_json(const GptConfig& model, const SimulatedCandidate& candidate);
SimulatedCandidate parse_simulated_candidate_json(const std::string& json);

// A search of one job: what `search` and `goodput --search` read from their flags, and the plans it considers.
struct SearchRequest {
  int64_t gpus = 0, global_batch = 0;
  size_t top = 0;            // plans confirmed by the full simulation
  int jobs = 1;              // threads of the estimates
  topo::ClusterSpec cluster; // sized to the GPUs unless the nodes were given
  GpuComputeModel gpu;
  PlanEnumeration plans; // at least one plan fits
};

// The largest tensor-parallel size a search of `gpus` GPUs of `cluster` tries: the NVLink domain (the node, or a
// rack of trays on an NVL72), so that the TP collectives stay on NVLink.
int64_t search_max_tp(int64_t gpus, const topo::ClusterSpec& cluster);

// Throws InputError "--gpus: ..." when `gpus` is more than one node of `cluster` but not whole nodes.
void check_whole_nodes(int64_t gpus, const topo::ClusterSpec& cluster);

// The plans a search of `model` on `gpus` GPUs of `cluster` (sized to them) considers (enumerate_plans, TP up to
// search_max_tp), after refusing (check_work) a search of more than `max_work_items` items that would confirm `top`.
// Throws InputError when no plan splits over the GPUs ("--gpus: ...") or none fits, naming the smallest plan's
// memory against the GPU's.
PlanEnumeration enumerate_search_plans(const GptConfig& model, int64_t gpus, int64_t global_batch,
                                       const topo::ClusterSpec& cluster, const SearchSpace& space, int64_t top,
                                       double max_work_items);

// Ranks `fitting` with the fast estimator (`jobs` threads), simulates the best `top` in full and returns them
// fastest (simulated) first. `command` names the subcommand in error messages ("search"); `show_progress`
// enables the progress bars (progress.hpp: on a terminal only) of the estimates and of the simulations. With
// `ruled_out`, how many plans rank_plans ruled out by their compute alone (never estimated).
std::vector<SimulatedCandidate> rank_and_simulate(const topo::ClusterSpec& cluster, const topo::ClusterGraph& graph,
                                                  const GptConfig& model, const std::vector<PlanCandidate>& fitting,
                                                  const GpuComputeModel& gpu, const FrameworkProfile& framework,
                                                  int jobs, size_t top, const char* command, bool show_progress,
                                                  size_t* ruled_out = nullptr);

} // namespace gputwin::sim
