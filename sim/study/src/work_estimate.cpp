#include "gputwin/sim/work_estimate.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/resource_estimate.hpp"
#include "gputwin/sim/steady_state.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

namespace gputwin::sim {

WorkEstimate& WorkEstimate::operator+=(const WorkEstimate& other)
{
  plans += other.plans;
  schedule_steps += other.schedule_steps;
  ops += other.ops;
  flows += other.flows;
  ops_exact = ops_exact && other.ops_exact;
  micro_batches = std::max(micro_batches, other.micro_batches);
  return *this;
}

namespace {

// The closed forms of one (model, plan) shape, in doubles (no overflow at any size): m micro-batches per
// pipeline, v model chunks per stage. Every stage walks its schedule of 2 m v steps (pipeline_schedule); every
// micro-batch runs forward and backward through every layer, at least one op each; each of the pp v - 1 chunk
// boundaries carries an activation forward and a gradient back per micro-batch, one flow per GPU of a stage.
WorkEstimate shape_work(double layers, double pp, double v, double m, double gpus, bool workload)
{
  WorkEstimate w;
  w.plans = 1;
  w.micro_batches = m;
  w.schedule_steps = pp * 2 * m * v;
  if (workload) {
    w.ops = 2 * m * layers;
    w.flows = pp > 1 ? 2 * m * (pp * v - 1) * (gpus / pp) : 0;
  }
  return w;
}

std::vector<int64_t> divisors(int64_t n)
{
  std::vector<int64_t> low, high;
  for (int64_t d = 1; d * d <= n; ++d)
    if (n % d == 0) {
      low.push_back(d);
      if (d * d != n)
        high.push_back(n / d);
    }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

} // namespace

WorkEstimate estimate_plan_work(const GptConfig& model, const ParallelPlan& plan, bool workload, bool probe_ops,
                                const WorkloadOptions& options)
{
  WorkEstimate w = shape_work(static_cast<double>(model.layers), static_cast<double>(plan.pp),
                              static_cast<double>(stage_chunks(plan)), static_cast<double>(plan.micro_batches()),
                              static_cast<double>(plan.gpus()), workload);
  if (workload && probe_ops) {
    w.ops = probed_op_count(model, plan, options);
    w.ops_exact = true;
  }
  return w;
}

WorkEstimate estimate_search_work(const GptConfig& model, int64_t gpus, int64_t global_batch, int64_t max_tp,
                                  const SearchSpace& space, int64_t top)
{
  double simulated_flows = 0;            // the most pipeline-message flows one full simulation of a plan may run
  constexpr double recompute_modes = 3;  // the memory model runs for none, selective, full until one fits
  constexpr double overlap_variants = 2; // rank_plans estimates a plan with its overlaps and without
  WorkEstimate total;
  for (const int64_t tp : divisors(gpus)) {
    if (tp > std::max<int64_t>(1, max_tp) || model.heads % tp != 0)
      continue;
    for (const int64_t cp : space.context_parallel) {
      if (cp < 1 || (gpus / tp) % cp != 0)
        continue;
      for (const int64_t pp : divisors(gpus / (tp * cp))) {
        const int64_t dp = gpus / (tp * cp * pp);
        if (model.layers % pp != 0 || global_batch % dp != 0)
          continue;
        for (const int64_t micro_batch : space.micro_batches) {
          if (micro_batch < 1 || (global_batch / dp) % micro_batch != 0)
            continue;
          const int64_t m = global_batch / dp / micro_batch;
          std::vector<int64_t> chunks = {1};
          if (pp > 1 && m % pp == 0)
            for (const int64_t v : space.interleaved_chunks)
              if (v > 1 && model.layers % (pp * v) == 0)
                chunks.push_back(v);
          for (const int64_t v : chunks) {
            WorkEstimate w =
                shape_work(static_cast<double>(model.layers), static_cast<double>(pp), static_cast<double>(v),
                           static_cast<double>(m), static_cast<double>(gpus), true);
            w.schedule_steps *= recompute_modes;
            // An estimate executes the steady state's sample where it is worth it (steady_state.hpp), not m
            // micro-batches: its ops and pipeline messages grow with what it executes.
            ParallelPlan plan;
            plan.tp = tp;
            plan.cp = cp;
            plan.pp = pp;
            plan.dp = dp;
            plan.micro_batch = micro_batch;
            plan.global_batch = global_batch;
            plan.schedule = v > 1 ? Schedule::Interleaved : Schedule::OneFOneB;
            plan.chunks = v;
            if (const std::optional<SteadyStateSample> sample = steady_state_sample(plan)) {
              const double share = static_cast<double>(sample->micro_batches) / static_cast<double>(m);
              w.ops *= share;
              w.flows *= share;
            }
            // Only the best `top` are simulated with flows; the estimator times each distinct pipeline message
            // once (two per stage boundary and chunk, all copies), whatever m.
            simulated_flows = std::max(simulated_flows, w.flows);
            w.flows = pp > 1 ? 2.0 * static_cast<double>(pp * v - 1) * static_cast<double>(gpus / pp) : 0;
            w.ops *= overlap_variants;
            w.flows *= overlap_variants;
            total += w;
          }
        }
      }
    }
  }
  total.flows += static_cast<double>(std::max<int64_t>(1, top)) * simulated_flows;
  return total;
}

WorkEstimate iteration_cases_work(const std::vector<IterationCase>& cases)
{
  WorkEstimate total;
  for (const IterationCase& c : cases)
    total += estimate_plan_work(c.model, c.plan, true, false, c.options);
  return total;
}

void check_work(const WorkEstimate& w, double limit, const std::string& what)
{
  if (!(limit > 0) || w.total() <= limit)
    return;
  std::string counts;
  const auto add = [&](double n, const std::string& name) {
    if (n > 0)
      counts += std::string(counts.empty() ? "" : ", ") + "~" + count_text(n) + " " + name;
  };
  add(w.ops, w.ops_exact ? "ops" : "ops (at least)");
  add(w.schedule_steps, "pipeline-schedule steps");
  add(w.flows, "pipeline-message flows");
  std::string detail = count_text(w.micro_batches) + " micro-batches per pipeline";
  if (w.plans > 1)
    detail = count_text(w.plans) + " plans, up to " + detail;
  char limit_text[32];
  std::snprintf(limit_text, sizeof limit_text, "%.3g", limit);
  throw InputError("--max-work: " + what + " would build " + counts + " (" + detail + "), more than the limit of " +
                   limit_text +
                   " (expected a smaller --global-batch, plan or cluster, or --max-work N above the estimate to run "
                   "it anyway)");
}

} // namespace gputwin::sim
