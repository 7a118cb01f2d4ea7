#pragma once
// Plan search: every parallel plan of a model on N GPUs that the memory model says fits, ranked by the fast
// estimator (estimate_iteration: the same workload, compute model and host model as the full simulation; the
// network as contention-free times plus one fluid pass of link sharing). The command (`gputwin search`) then confirms the best K with the full flow-level
// simulation. Plain C++, no SimGrid.
//
// The space: tp over the divisors of N up to the GPUs of one node that divide the heads; cp over the given
// context-parallel sizes that divide N / tp (default_context_parallel); pp over the divisors of N / (tp cp) that divide the
// layers; dp = N / (tp cp pp), dividing the global batch; micro-batches from
// `micro_batches` dividing B / dp; 1F1B, and interleaved 1F1B with `chunks` chunks where the layers and the
// micro-batches allow. Choices that cost no time but save memory are fixed rather than enumerated:
// sequence parallelism whenever tp > 1 (the same bytes as the all-reduce, as reduce-scatter + all-gather, and
// layernorm/dropout work split by t) and ZeRO-1 whenever dp x cp > 1 (reduce-scatter + all-gather instead of
// all-reduce: the same bytes). Recompute is the cheapest that fits: none, else selective, else full. ZeRO-2 and
// ZeRO-3 (pp = 1; more communication: a reduce-scatter per micro-batch, ZeRO-3's gathers) are for memory: with
// pp = 1 and dp x cp > 1, where ZeRO-1 does not fit even with full recompute, ZeRO-2, else ZeRO-3, with its cheapest
// recompute -- by default only when no plan fits without them (SearchSpace::sharded), so a model that fits only
// sharded gets its FSDP plans and a model that fits unsharded keeps its ranking.
// GPipe is left out: it runs the same work as 1F1B with more activations in flight.
// Megatron-Core's overlaps (WorkloadOptions: --tp-comm-overlap, --overlap-grad-reduce, --overlap-param-gather) are
// tried rather than fixed: each candidate carries every overlap that applies to it (applicable_overlaps), and
// rank_plans estimates it with those and with none, keeping the faster (the overlaps on a tie): chunked TP
// communication costs GEMM efficiency, and on a plan with little to hide it can lose (gpt3-175b on 64 A100s).

#include "gputwin/models/framework_profile.hpp"
#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/gpu_compute_model.hpp"
#include "gputwin/models/parallel_plan.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace gputwin::sim {

// When enumerate_plans tries ZeRO-2/3 (see above): only if no plan fits with ZeRO-0/1, or for every split where
// ZeRO-1 does not fit (a sharded plan may then rank first: gpt-22b on 16 A100s gets a ZeRO-2 plan 1 % faster).
enum class ShardedStages { WhenNothingElseFits, Always };

struct SearchSpace {
  std::vector<int64_t> micro_batches = {1, 2, 4, 8};
  std::vector<int64_t> interleaved_chunks = {2, 4};
  int64_t max_tp = 0; // 0: the GPUs of one node
  AttentionKernel attention = AttentionKernel::Unfused;
  // Context-parallel sizes to try (each dividing N / tp; plans need flash attention and the sequence divisible by
  // 2 cp, checked by validate_plan). Commands default it to default_context_parallel.
  std::vector<int64_t> context_parallel = {1};
  // Every plan's linear-layer GEMMs in this precision (Transformer Engine; the GPU needs its tensor cores).
  GemmPrecision precision = GemmPrecision::Bf16;
  Fp8Recipe fp8_recipe = Fp8Recipe::Delayed; // with precision Fp8
  bool overlaps = true; // candidates carry applicable_overlaps (rank_plans tries them); false: none
  ShardedStages sharded = ShardedStages::WhenNothingElseFits;
};

// The context-parallel sizes a search tries where the user names none: 1, 2, 4, 8 with flash attention on
// sequences of 8192 tokens or more (where Megatron-Core users split the sequence), else 1 only. Sizes that do not
// divide N / tp or leave the sequence indivisible by 2 cp are dropped by enumerate_plans.
std::vector<int64_t> default_context_parallel(const GptConfig& model, AttentionKernel attention);

struct PlanCandidate {
  ParallelPlan plan;
  int64_t peak_memory_bytes = 0; // busiest stage, one GPU
  WorkloadOptions options;       // the overlaps it runs with (after rank_plans: the faster variant's)
};

struct PlanEnumeration {
  std::vector<PlanCandidate> fitting;
  int64_t shapes = 0;      // (tp, pp, dp, micro-batch, schedule, chunks) points that are valid plans
  int64_t too_big = 0;     // ... of which even full recompute (with the highest ZeRO stage tried) does not fit
  PlanCandidate smallest;  // the plan with the least memory of all (whether or not it fits)
};

// REQUIRES: gpus >= 1, global_batch >= 1, gpus_per_node >= 1.
PlanEnumeration enumerate_plans(const GptConfig& model, int64_t gpus, int64_t global_batch, int64_t gpus_per_node,
                                int64_t hbm_bytes, const SearchSpace& space = {});

struct PlanEstimate {
  PlanCandidate candidate;
  double iteration_time_s = 0; // estimated; for a plan ruled out (estimated false): its lower bound
  bool estimated = true;
};

// A lower bound on the iteration time of `workload` in either executor, from compute alone: each stage's compute
// ops run one after another on its compute stream, each at most at its speed alone (compute-communication
// interference, stragglers and the host only slow them), so no stage ends before their sum; and a stage's
// per-micro-batch ops cannot start before micro-batch 0's forward (chunk 0) has run on every stage before it (the
// pipeline's fill). Computed from one and two schedule steps of micro-batches (the sum grows by the same ops with
// each), not from the whole workload. With `graph`, a bound on the estimate (estimate_iteration) that also counts the
// blocking collectives of the compute stream (TP all-gathers and reduce-scatters without --tp-comm-overlap, the SP
// and embedding gradient all-reduces) at their contention-free duration: the estimator ends a collective no sooner
// than that after its start, and link sharing only stretches it (26% tighter on gpt3-175b's tp-8 plans).
double iteration_lower_bound_s(const Workload& workload, const GpuComputeModel& gpu,
                               const topo::ClusterGraph* graph = nullptr);

// Estimates the candidates (threads in parallel; `progress(done, total)` after each window of variants, on the
// calling thread, may be empty) and returns them fastest first, the plans ruled out last; ties keep enumeration
// order, so the result is deterministic. Each candidate has a variant without overlaps and, where overlaps apply,
// one with them; it keeps the faster (its options say which; the overlaps on a tie).
// With top < candidates (and shortcuts on: GPUTWIN_EXACT unset), branch and bound: the variants are taken in
// increasing iteration_lower_bound_s (compute alone) until that bound exceeds the top-th best time so far (the
// final top-th time is at most that); a variant taken is estimated unless estimate_lower_bound_s (its contention-free
// pass) exceeds the top-th time. Windows of `threads` variants are computed in parallel and taken
// in order as one thread would, so the plans estimated do not depend on the threads. A plan ruled out is listed
// with the least bound known for it (estimated false). The first `top` are the ones every variant estimated would
// rank first; past them a plan may lack a variant. REQUIRES: top >= 1.
std::vector<PlanEstimate> rank_plans(const topo::ClusterGraph& graph, const GptConfig& model,
                                     const std::vector<PlanCandidate>& candidates, const GpuComputeModel& gpu,
                                     const FrameworkProfile& framework, int threads,
                                     const std::function<void(size_t done, size_t total)>& progress = {},
                                     size_t top = SIZE_MAX);

} // namespace gputwin::sim
