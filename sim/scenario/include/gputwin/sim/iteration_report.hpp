#pragma once
// What every command reports of one executed iteration, derived in one place: throughput, MFU and HFU (each
// against the right peak), the pipeline bubble (of the busiest stage), the first stage's idle share, compute and
// exposed communication. simulate,
// search, sweep and goodput all print these figures from here.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"
#include "gputwin/sim/iteration_result.hpp"
#include "gputwin/topologies/cluster_spec.hpp"
#include "gputwin/traces/json_value.hpp"
#include "gputwin/common/json_writer.hpp"

#include <cstdint>
#include <string>

namespace gputwin::sim {

struct IterationReport {
  double iteration_time_s = 0, tokens_per_s = 0;
  double model_flops = 0;    // per iteration, dense attention (the papers' convention)
  double hardware_flops = 0; // executed, recompute and the attention kernel's own count included
  double mfu = 0;            // model FLOPs against the peak of the linear GEMMs' precision (mfu_precision)
  std::string mfu_precision = "bf16";
  double mfu_peak_flops = 0; // per GPU, the peak `mfu` divides by
  double mfu_bf16 = 0;       // model FLOPs against the BF16 peak
  double hfu = 0;            // executed FLOPs, each against its own precision's peak (cannot pass 100 %)
  // The pipeline bubble: the busiest stage's idle time inside the pipeline over its compute (the stage with the
  // most compute in its pipeline window: the one the others wait for); on a communication-free cluster with
  // equal stages (p - 1)/m for 1F1B and GPipe, (p - 1)/(v m) interleaved. Lighter stages idle longer: that
  // extra is the stages' imbalance (the loss on the last stage, the embedding on the first), which
  // first_stage_idle_fraction includes.
  double bubble_fraction = 0;
  int64_t bubble_stage = 0;              // the pipeline stage bubble_fraction is measured on
  double first_stage_idle_fraction = 0;  // the first stage's idle time inside its pipeline window over its compute
  double compute_s = 0;      // the first stage's kernels
  double exposed_comm_s = 0; // the first stage's compute stream held by communication
  int64_t gpus = 0, nodes = 0;
  int64_t simulated_events = 0;   // ops executed plus flows simulated
  int64_t simulated_programs = 0; // one per stage, more where stragglers break a stage's symmetry
  // Mixture of experts (`moe` true for a model with experts; expert_load.hpp): the first stage's compute stream
  // held by token exchanges, the busiest EP rank's load over the balanced share (the largest over the MoE
  // layers), the experts' MaxVio (max load / mean - 1), the routed copies dropped by the capacity factor, and the
  // EP rank the others wait for most (its EP index, and its global rank in the first stage's first EP group).
  bool moe = false;
  double moe_exchange_s = 0, moe_max_rank_load = 1, moe_expert_maxvio = 0, moe_dropped_fraction = 0;
  int64_t moe_slowest_ep_index = 0, moe_slowest_rank = 0;
};

// The report of `result`, an iteration of `model` under `plan` on `cluster` (its GPU's peaks, its nodes).
IterationReport iteration_report(const GptConfig& model, const ParallelPlan& plan, const topo::ClusterSpec& cluster,
                                 const IterationResult& result);

// The report as one JSON object (the next value of `json`), and back: how a run in another process returns it.
// Every number round-trips exactly (shortest round-trip form). The reader throws std::runtime_error on a missing
// or mistyped member.
void write_iteration_report(JsonWriter& json, const IterationReport& report);
IterationReport read_iteration_report(const traces::JsonValue& object);
// The MoE members of `report` (exchange_s, max_rank_load, ...) into the JSON object being written: the "moe" object
// of write_iteration_report and of `simulate --json`.
void write_moe_members(JsonWriter& json, const IterationReport& report);

} // namespace gputwin::sim
