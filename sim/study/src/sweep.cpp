#include "gputwin/sim/sweep.hpp"

#include "gputwin/common/byte_text.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/common/progress.hpp"
#include "gputwin/sim/isolated_run.hpp"
#include "gputwin/sim/simulated_search.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <algorithm>
#include <stdexcept>

namespace gputwin::sim {

namespace {

// The search space at a point of `model` on `cluster`: the request's, with the cluster's attention kernel and the
// request's context-parallel sizes, else the model's default.
SearchSpace point_space(const SweepRequest& s, const SweepCluster& cluster, const GptConfig& model)
{
  SearchSpace space = s.space;
  space.attention = cluster.attention;
  space.context_parallel = s.context_parallel.value_or(default_context_parallel(model, space.attention));
  return space;
}

// What the process of one point sends back: 'R' and the best plan as JSON (simulated_candidate_json), or 'S' and
// why the point is skipped.
std::string run_point(const SweepRequest& s, const SweepPoint& p)
{
  const GptConfig& model = s.models[p.model];
  const SweepCluster& c = s.clusters[p.cluster];
  const topo::ClusterSpec cluster = topo::load_cluster(
      c.name, static_cast<int>(std::max<int64_t>(1, p.gpus / c.node.gpus_per_node)), s.set_overrides);
  const PlanEnumeration plans =
      enumerate_plans(model, p.gpus, s.global_batch.value_or(p.gpus), search_max_tp(p.gpus, cluster),
                      cluster.gpu.hbm_bytes, point_space(s, c, model));
  if (plans.shapes == 0)
    return "Sno parallel plan splits it (tp must divide the heads " + std::to_string(model.heads) + ", pp the layers " +
           std::to_string(model.layers) + ", dp the global batch)";
  if (plans.fitting.empty())
    return "Sno plan fits: the smallest, " + describe_plan(plans.smallest.plan) + ", needs " +
           format_gib_number(static_cast<double>(plans.smallest.peak_memory_bytes)) + " GiB per GPU but the " +
           cluster.gpu.kind + " has " + format_gib_number(static_cast<double>(cluster.gpu.hbm_bytes)) + " GiB";
  const topo::ClusterGraph graph(cluster);
  const std::vector<SimulatedCandidate> ranked =
      rank_and_simulate(cluster, graph, model, plans.fitting, c.gpu, c.framework, s.threads_per_point,
                        static_cast<size_t>(s.top), "sweep", false);
  return "R" + simulated_candidate_json(model, ranked.front());
}

// The row of point `index` from the best plan its process sent back.
SweepRow point_row(const SweepRequest& s, const SweepPoint& p, size_t index, const SimulatedCandidate& best)
{
  SweepRow row;
  row.point = index;
  row.model = s.models[p.model].name;
  row.cluster = s.clusters[p.cluster].name;
  row.gpus = p.gpus;
  row.plan = best.estimate.candidate.plan;
  row.options = best.estimate.candidate.options;
  row.peak_memory_bytes = best.estimate.candidate.peak_memory_bytes;
  row.iteration_time_s = best.report.iteration_time_s;
  row.tokens_per_s = best.report.tokens_per_s;
  row.mfu = best.report.mfu; // of the GEMMs' precision peak, as simulate's
  if (!std::isnan(s.tokens)) {
    row.time_to_train_s = s.tokens / row.tokens_per_s;
    row.gpu_hours = static_cast<double>(p.gpus) * row.time_to_train_s / 3600;
  }
  if (!std::isnan(s.clusters[p.cluster].price_per_gpu_hour))
    row.cost = row.gpu_hours * s.clusters[p.cluster].price_per_gpu_hour;
  return row;
}

} // namespace

SweepPoints sweep_points(const SweepRequest& request)
{
  SweepPoints points;
  for (size_t m = 0; m < request.models.size(); ++m)
    for (size_t c = 0; c < request.clusters.size(); ++c)
      for (const int64_t gpus : request.gpu_counts)
        points.all.push_back(SweepPoint{m, c, gpus});
  for (size_t i = 0; i < points.all.size(); ++i)
    if (request.shard.contains(i))
      points.selected.push_back(i);
  return points;
}

std::string describe_point(const SweepRequest& request, const SweepPoint& p)
{
  return sweep_point_name(request.models[p.model].name, p.gpus, request.clusters[p.cluster].node.name) +
         ", global batch " + std::to_string(request.global_batch.value_or(p.gpus));
}

WorkEstimate sweep_work(const SweepRequest& request, const SweepPoints& points)
{
  WorkEstimate total;
  for (const size_t i : points.selected) {
    const SweepPoint& p = points.all[i];
    const GptConfig& model = request.models[p.model];
    const SweepCluster& c = request.clusters[p.cluster];
    total += estimate_search_work(model, p.gpus, request.global_batch.value_or(p.gpus), search_max_tp(p.gpus, c.node),
                                  point_space(request, c, model), request.top);
  }
  return total;
}

SweepResult run_sweep_points(const SweepRequest& request, const SweepPoints& points, int jobs, bool show_progress)
{
  const std::vector<size_t>& selected = points.selected;
  ProgressBar progress("sweep points", show_progress);
  size_t done = 0;
  progress.update(0, selected.size());
  const std::vector<std::string> outcomes = run_isolated(
      selected.size(), jobs, [&](size_t k) { return run_point(request, points.all[selected[k]]); },
      IsolatedRunCallbacks{[&](size_t, const std::string&) { progress.update(++done, selected.size()); },
                           [&] { progress.tick(); },
                           [&](size_t k) { return "the point " + describe_point(request, points.all[selected[k]]); }});
  progress.finish();

  SweepResult result;
  for (size_t k = 0; k < selected.size(); ++k) {
    const SweepPoint& p = points.all[selected[k]];
    if (outcomes[k].rfind("S", 0) == 0) {
      result.skipped.push_back(describe_point(request, p) + ": " + outcomes[k].substr(1));
      continue;
    }
    if (outcomes[k].rfind("R", 0) != 0)
      throw std::runtime_error("the process of the point " + describe_point(request, p) + " sent a malformed answer");
    result.rows.push_back(point_row(request, p, selected[k], parse_simulated_candidate_json(outcomes[k].substr(1))));
  }
  if (result.rows.empty() && !request.shard.sliced()) {
    if (result.skipped.size() == 1)
      throw InputError(result.skipped.front());
    throw InputError("no plan fits at any of the " + std::to_string(result.skipped.size()) +
                     " points of the sweep; at the last, " + result.skipped.back());
  }
  if (!request.shard.sliced())
    compute_scaling_efficiency(result.rows);
  return result;
}

} // namespace gputwin::sim
