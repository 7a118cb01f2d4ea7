#pragma once
// THE pipeline schedule: the order of forward and backward micro-batches on each stage for GPipe, 1F1B
// and interleaved 1F1B. It is the only implementation in the project: the simulator's workload
// generator and the engine's pipeline driver both call it, so they run the same order.

#include "gputwin/models/parallel_plan.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gputwin {

enum class PipelinePhase { Forward, Backward };

// One unit of pipeline work: the forward or backward of one micro-batch through one model chunk.
struct PipelineStep {
  PipelinePhase phase;
  int64_t micro_batch; // 0 .. micro_batches-1
  int64_t chunk;       // model chunk on this stage, 0 .. chunks-1 (always 0 unless interleaved)
  bool operator==(const PipelineStep&) const = default;
};

struct PipelineShape {
  Schedule schedule = Schedule::OneFOneB;
  int64_t stages = 1;        // p
  int64_t micro_batches = 1; // m, per pipeline per iteration
  int64_t chunks = 1;        // v, model chunks per stage (interleaved only)
  // Interleaved only: forward steps every stage runs before its first backward beyond the schedule's own (Megatron-
  // Core adds one with --overlap-moe-expert-parallel-comm, so that each 1F1B step's forward and backward are
  // independent: pipeline_parallel/schedules.py get_pp_rank_microbatches).
  int64_t extra_warmup = 0;
};

// The shape `plan` runs.
PipelineShape pipeline_shape(const ParallelPlan& plan);

// Forward steps (one chunk of one micro-batch each) `stage` runs before its first backward: GPipe m; 1F1B
// min(p - stage - 1, m); interleaved (Megatron-LM) min(2(p - stage - 1) + (v - 1)p, m v), or m v when m == p. The
// cool-down runs as many backward steps after the last forward. REQUIRES: as stage_schedule.
int64_t warmup_steps(const PipelineShape& shape, int64_t stage);

// The order of steps on `stage` (0 = first). Every (micro-batch, chunk) appears once forward and once
// backward. REQUIRES: stages, micro_batches, chunks >= 1; interleaved: micro_batches a multiple of stages.
std::vector<PipelineStep> stage_schedule(const PipelineShape& shape, int64_t stage);

// The shape with the fewest micro-batches whose schedule reaches, on every stage, the same running peaks of any
// per-chunk weight of the in-flight steps as `shape`'s (peak_in_flight, peak_layers_in_flight, a chunk's count):
// after the warm-up, each forward-backward pair of the steady phase repeats the one p v pairs earlier (1F1B: the
// one before) and the cool-down only drains, so the peak is reached within the warm-up and one period. 1F1B keeps
// at most p + 1 micro-batches, interleaved 5 p (m' v - warm-up >= p v, and m' != p unless m == p), GPipe all
// (its forwards all run first). Lets a memory estimate of 10^7 micro-batches walk a few hundred steps (tested
// equal to the whole schedule).
PipelineShape peak_equivalent_shape(const PipelineShape& shape);

// The most (micro-batch, chunk) pairs whose forward has run and backward has not, at any point on
// `stage` — what bounds the stage's stored activations. Closed form, equal to
// peak_in_flight(stage_schedule(shape, stage)) (tested): GPipe m; 1F1B min(p - stage, m); interleaved
// min(2(p - stage - 1) + (v - 1)p + 1, m v), or m v when m == p.
int64_t peak_in_flight(const PipelineShape& shape, int64_t stage);

// The same maximum, counted along an emitted order.
int64_t peak_in_flight(const std::vector<PipelineStep>& steps);

// The most in-flight (micro-batch, chunk) pairs on `stage`, each weighted by its chunk's entry of `chunk_weight`
// (one per chunk): a chunk's layers, or 1 for chunk 0 only (what micro-batches hold their first chunk's tensors).
// Walks the schedule of peak_equivalent_shape(shape), so its cost does not grow with the micro-batches.
int64_t peak_weighted_in_flight(const PipelineShape& shape, int64_t stage, const std::vector<int64_t>& chunk_weight);

// The most transformer layers whose forward has run and backward has not on `stage` of `plan`: the in-flight
// (micro-batch, chunk) pairs weighted by their chunk's layers (chunk_layers), along stage_schedule's order.
// peak_in_flight x the stage's layers per chunk when its chunks are equal. REQUIRES: validate_plan passed.
int64_t peak_layers_in_flight(const GptConfig& model, const ParallelPlan& plan, int64_t stage);

// "F0 F1 B0 F2 B1 B2" (chunks as F0.1 when interleaved), for tests and debugging.
std::string format_schedule(const std::vector<PipelineStep>& steps, bool show_chunks);

} // namespace gputwin
