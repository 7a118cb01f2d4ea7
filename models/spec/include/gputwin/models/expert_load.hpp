#pragma once
// How a mixture-of-experts layer's routed tokens spread over its experts and EP ranks: the load model.
//
// Balanced (--moe-imbalance 0): every expert gets k T / E token copies, as benchmarks force it
// (Megatron-Core --moe-router-force-load-balancing). Imbalanced (--moe-imbalance CV > 0): expert popularity
// p_e ~ LogNormal with mean 1 and coefficient of variation CV (sigma^2 = ln(1 + CV^2)), drawn per MoE layer from
// a seeded generator (SplitMix64 + Box-Muller: the same numbers on every platform) and rescaled to mean exactly 1.
// An EP rank's load is the mean popularity of its E/ep experts; the capacity factor C (token dropping) caps each
// expert at C. Published expert-load statistics are given as MaxVio = max load / mean load - 1 (Wang et al. 2024,
// "Auxiliary-Loss-Free Load Balancing", arXiv:2408.15664; DeepSeek-V3 arXiv:2412.19437 Section 2.1.2): the
// report prints each run's MaxVio of experts and of EP ranks, so a CV can be chosen to match a measured MaxVio.
//
// All ranks route from the same distribution, so the dispatch all-to-all sends rank i -> j a share proportional
// to j's load (and the combine the transpose): a rank-1 traffic matrix.

#include "gputwin/models/gpt_config.hpp"
#include "gputwin/models/parallel_plan.hpp"

#include <cstdint>
#include <vector>

namespace gputwin {

struct LayerExpertLoad {
  int64_t layer = 0;               // global transformer layer index (a MoE layer)
  std::vector<double> expert;      // E loads, mean 1 before the capacity cap (tokens routed / balanced share)
  std::vector<double> rank;        // ep loads: the mean of each EP rank's experts after the cap
  int64_t busiest_rank = 0;        // EP index with the largest load (the lowest index on a tie)
  double max_rank_load() const { return rank.empty() ? 1.0 : rank[static_cast<size_t>(busiest_rank)]; }
};

struct ExpertLoads {
  std::vector<LayerExpertLoad> layers; // one per MoE layer, in layer order; empty for a dense model
  // The entry of `layer`, or nullptr when it is not a MoE layer.
  const LayerExpertLoad* find(int64_t layer) const;
  // The largest rank load over all layers (1 when balanced) and the expert MaxVio over all layers.
  double max_rank_load() const;
  double max_expert_violation() const;
  // The EP index whose load summed over the layers is largest: the rank the others wait for most.
  int64_t slowest_rank() const;
  // Tokens dropped by the capacity cap, as a fraction of all routed token copies (0 when dropless).
  double dropped_fraction = 0;
};

// The loads of every MoE layer of `model` under `plan` (plan.moe_imbalance_cv, plan.moe_seed, plan.capacity_factor,
// plan.ep). Deterministic. REQUIRES: validate_plan(model, plan) passed.
ExpertLoads expert_loads(const GptConfig& model, const ParallelPlan& plan);

} // namespace gputwin
