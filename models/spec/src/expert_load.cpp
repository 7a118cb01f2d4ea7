#include "gputwin/models/expert_load.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gputwin {

namespace {

// SplitMix64 (Steele, Lea, Flood 2014): a fixed integer recurrence, so the draw is the same everywhere (the
// standard library's distributions are not specified bit for bit).
class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next()
  {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1): 53 random bits, never 0.
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  // Standard normal (Box-Muller, the cosine branch).
  double normal() { return std::sqrt(-2.0 * std::log(uniform())) * std::cos(2.0 * M_PI * uniform()); }

private:
  uint64_t state_;
};

LayerExpertLoad layer_load(const GptConfig& model, const ParallelPlan& plan, int64_t layer, double& dropped)
{
  const int64_t E = model.moe.experts;
  LayerExpertLoad out;
  out.layer = layer;
  out.expert.assign(static_cast<size_t>(E), 1.0);
  if (plan.moe_imbalance_cv > 0) {
    const double sigma = std::sqrt(std::log1p(plan.moe_imbalance_cv * plan.moe_imbalance_cv));
    SplitMix64 rng(plan.moe_seed * 0x100000001b3ULL + static_cast<uint64_t>(layer) + 1);
    for (double& p : out.expert)
      p = std::exp(sigma * rng.normal() - 0.5 * sigma * sigma);
    const double mean = std::accumulate(out.expert.begin(), out.expert.end(), 0.0) / static_cast<double>(E);
    for (double& p : out.expert)
      p /= mean;
  }
  std::vector<double> kept = out.expert;
  if (plan.capacity_factor > 0)
    for (double& p : kept) {
      dropped += std::max(0.0, p - plan.capacity_factor);
      p = std::min(p, plan.capacity_factor);
    }
  const int64_t per_rank = E / plan.ep;
  out.rank.assign(static_cast<size_t>(plan.ep), 0.0);
  for (int64_t e = 0; e < E; ++e)
    out.rank[static_cast<size_t>(e / per_rank)] += kept[static_cast<size_t>(e)] / static_cast<double>(per_rank);
  out.busiest_rank = std::max_element(out.rank.begin(), out.rank.end()) - out.rank.begin();
  return out;
}

} // namespace

const LayerExpertLoad* ExpertLoads::find(int64_t layer) const
{
  const auto it = std::lower_bound(layers.begin(), layers.end(), layer,
                                   [](const LayerExpertLoad& l, int64_t v) { return l.layer < v; });
  return it != layers.end() && it->layer == layer ? &*it : nullptr;
}

double ExpertLoads::max_rank_load() const
{
  double most = 1.0;
  for (const LayerExpertLoad& l : layers)
    most = std::max(most, l.max_rank_load());
  return most;
}

double ExpertLoads::max_expert_violation() const
{
  double most = 0.0;
  for (const LayerExpertLoad& l : layers)
    most = std::max(most, *std::max_element(l.expert.begin(), l.expert.end()) - 1.0);
  return most;
}

int64_t ExpertLoads::slowest_rank() const
{
  if (layers.empty())
    return 0;
  std::vector<double> total(layers.front().rank.size(), 0.0);
  for (const LayerExpertLoad& l : layers)
    for (size_t r = 0; r < total.size(); ++r)
      total[r] += l.rank[r];
  return std::max_element(total.begin(), total.end()) - total.begin();
}

ExpertLoads expert_loads(const GptConfig& model, const ParallelPlan& plan)
{
  ExpertLoads loads;
  if (!model.moe.enabled())
    return loads;
  double dropped = 0;
  for (int64_t l = 0; l < model.layers; ++l)
    if (model.is_moe_layer(l))
      loads.layers.push_back(layer_load(model, plan, l, dropped));
  if (!loads.layers.empty())
    loads.dropped_fraction = dropped / static_cast<double>(loads.layers.size() * model.moe.experts);
  return loads;
}

} // namespace gputwin
