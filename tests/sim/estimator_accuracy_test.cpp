// The fast estimator (sim/estimator: estimate_iteration, longest paths, no SimGrid) against the full flow-level
// simulation (sim/executor: simulate_iteration on SimGrid) on plan ranking: Spearman rank correlation >= 0.9
// between estimated and simulated iteration times over >= 50 feasible plans of GPT-3 175B on 512 A100
// (dgx-a100, 64 nodes) spanning the search space (tp, pp, dp, micro-batch, 1F1B / interleaved with 2 and 4
// chunks, the recompute each needs). The figures are printed (per plan, then the worst error and rho). The other
// accuracy check, Table 5 of Korthikanti et al. 2022 (its 8 configurations estimated within 5% of their full
// simulation, each), runs in tests/cli/table5_validation_test.cpp beside the eight full simulations that
// validate them against the paper. SimGrid 3.32 builds one platform per process, so every full simulation runs
// in a forked child (as `gputwin search` does, sim/study/simulated_search.cpp), two at a time; the estimates too, so
// that both cores work.
#include "gputwin/sim/isolated_run.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/models/workload.hpp"
#include "gputwin/sim/iteration_estimate.hpp"
#include "gputwin/sim/iteration_executor.hpp"
#include "gputwin/sim/plan_search.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace gputwin::sim {
namespace {

struct ClusterSetup {
  topo::ClusterSpec cluster;
  topo::ClusterGraph graph;
  GpuComputeModel gpu;
  explicit ClusterSetup(int64_t gpus)
      : cluster(topo::load_cluster("dgx-a100", static_cast<int>((gpus + 7) / 8), {})), graph(cluster),
        gpu(builtin_compute_model(cluster.gpu.generation, cluster.gpu.kind, cluster.gpu.peak_bf16_flops, cluster.gpu.hbm_bytes_per_s))
  {
  }
};

// Runs each job in a process of its own (sim::run_isolated: one SimGrid platform per process), at most `parallel`
// at once, and returns what each returned, exactly.
std::vector<double> run_in_children(const std::vector<std::function<double()>>& jobs, int parallel)
{
  const std::vector<std::string> texts = sim::run_isolated(jobs.size(), parallel, [&](size_t i) {
    char text[32]; // 17 significant digits: the double itself
    std::snprintf(text, sizeof text, "%.17g", jobs[i]());
    return std::string(text);
  });
  std::vector<double> out;
  for (const std::string& text : texts)
    out.push_back(std::strtod(text.c_str(), nullptr));
  return out;
}

int parallel_children()
{
  return 2; // the CI machine's cores
}

double seconds_since(std::chrono::steady_clock::time_point t0)
{
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Ranks (1-based, ties get the mean of their ranks).
std::vector<double> ranks(const std::vector<double>& x)
{
  std::vector<size_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> r(x.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && x[order[j + 1]] == x[order[i]])
      ++j;
    for (size_t k = i; k <= j; ++k)
      r[order[k]] = 0.5 * static_cast<double>(i + j) + 1;
    i = j + 1;
  }
  return r;
}

// Spearman's rho: Pearson's correlation of the ranks.
double spearman(const std::vector<double>& a, const std::vector<double>& b)
{
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

TEST(EstimatorRanks, Ranks)
{
  EXPECT_EQ(ranks({3, 1, 2}), (std::vector<double>{3, 1, 2}));
  EXPECT_EQ(ranks({1, 2, 2, 5}), (std::vector<double>{1, 2.5, 2.5, 4}));
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
}

// GPT-3 175B on 512 A100 (dgx-a100, 64 nodes), global batch 512 (a quarter of the paper's 175B batch keeps the 50
// full simulations near a minute on 2 cores): the plans `gputwin search` would rank (the 98 that fit the GPU's
// memory, each with the cheapest recompute that fits), 50 of them spread evenly over the enumeration order
// (which walks tp, pp, micro-batch and schedule), each estimated and simulated in full with the host of
// `search` (megatron-lm). Bound: Spearman's rho >= 0.9 over >= 50 plans.
TEST(EstimatorAccuracy, RanksPlansOf175bOn512GpusLikeTheFullSimulation)
{
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t gpus = 512, global_batch = 512;
  const size_t wanted = 50; // the bound's N (64 until 2026-11: rho was 1.0000 there too, for 28% more CPU)
  const GptConfig model = find_catalog_model("gpt3-175b")->model;
  const FrameworkProfile framework = builtin_framework_profile("megatron-lm");
  const ClusterSetup setup(gpus);
  const PlanEnumeration plans =
      enumerate_plans(model, gpus, global_batch, setup.cluster.gpus_per_node, setup.cluster.gpu.hbm_bytes);
  const size_t fitting = plans.fitting.size();
  ASSERT_GE(fitting, wanted);
  std::vector<ParallelPlan> chosen;
  for (size_t k = 0; k < wanted; ++k)
    chosen.push_back(plans.fitting[(k * (fitting - 1) + (wanted - 1) / 2) / (wanted - 1)].plan);
  std::vector<std::function<double()>> jobs; // the full simulations, then the estimates
  for (const bool full : {true, false})
    for (const ParallelPlan& plan : chosen)
      jobs.push_back([&model, &framework, &setup, plan, full] {
        const Workload workload = make_workload(model, plan);
        return full ? simulate_iteration(setup.graph, workload, setup.gpu, {}, framework).iteration_time_s
                    : estimate_iteration(setup.graph, workload, setup.gpu, framework).iteration_time_s;
      });
  const std::vector<double> results = run_in_children(jobs, parallel_children());
  const std::vector<double> simulated(results.begin(), results.begin() + static_cast<std::ptrdiff_t>(wanted));
  const std::vector<double> estimated(results.begin() + static_cast<std::ptrdiff_t>(wanted), results.end());
  std::printf("GPT-3 175B on %lld A100 (dgx-a100), global batch %lld: %zu of the %zu plans that fit, estimate vs "
              "full simulation\n",
              static_cast<long long>(gpus), static_cast<long long>(global_batch), chosen.size(), fitting);
  std::set<int64_t> tps, pps, micro_batches;
  std::set<std::string> schedules, recomputes;
  double worst = 0, sum = 0;
  for (size_t i = 0; i < chosen.size(); ++i) {
    const ParallelPlan& p = chosen[i];
    const double error = (estimated[i] - simulated[i]) / simulated[i];
    worst = std::max(worst, std::abs(error));
    sum += std::abs(error);
    tps.insert(p.tp);
    pps.insert(p.pp);
    micro_batches.insert(p.micro_batch);
    schedules.insert(to_string(p.schedule) + (p.chunks > 1 ? " x" + std::to_string(p.chunks) : ""));
    recomputes.insert(to_string(p.recompute));
    std::printf("  tp %lld pp %2lld dp %2lld mb %lld %-14s %-9s simulated %8.4f s  estimated %8.4f s  %+7.3f%%\n",
                static_cast<long long>(p.tp), static_cast<long long>(p.pp), static_cast<long long>(p.dp),
                static_cast<long long>(p.micro_batch),
                (to_string(p.schedule) + (p.chunks > 1 ? " x" + std::to_string(p.chunks) : "")).c_str(),
                to_string(p.recompute).c_str(), simulated[i], estimated[i], 100 * error);
    EXPECT_TRUE(std::isfinite(simulated[i]) && std::isfinite(estimated[i])) << describe_plan(p);
  }
  const double rho = spearman(estimated, simulated);
  std::printf("  spans tp %zu values, pp %zu, micro-batch %zu, schedules %zu, recompute %zu\n", tps.size(),
              pps.size(), micro_batches.size(), schedules.size(), recomputes.size());
  std::printf("  Spearman rho %.4f over N = %zu plans (bound: rho >= 0.9, N >= 50); |error| mean %.3f%%, worst "
              "%.3f%%  (%.1f s)\n",
              rho, chosen.size(), 100 * sum / static_cast<double>(chosen.size()), 100 * worst, seconds_since(t0));
  EXPECT_GE(chosen.size(), 50U);
  EXPECT_GE(rho, 0.9);
}

} // namespace
} // namespace gputwin::sim
