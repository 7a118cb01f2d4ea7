// The built-in nd-a100-v4 cluster's all-reduce against Echo's nccl-tests logs (2-128 A100, 8 B-4 GiB), one
// parameter set for every GPU count, simulated on SimGrid as `gputwin collective` does. Target:
// within 15% at >= 90% of the sizes and median |error| <= 8% per log; the bounds asserted are what the model
// reaches today (143 of 148 sizes; misses left: the warm-up outliers of 32-128 GPUs, 16 KiB at 128 GPUs, 8 MiB at
// 16), so a regression fails. Both targets are met at every N.
#include "data/nccl_tests_echo_a100.hpp"
#include "dgx_spec.hpp"

#include "gputwin/sim/collective_executor.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace gputwin::sim {
namespace {

struct LogError {
  double within_15_percent = 0; // fraction of sizes
  double median_abs_error = 0;
};

LogError simulate_log(int ranks)
{
  const auto& logs = reference::echo_a100_all_reduce_logs();
  const auto log = std::find_if(logs.begin(), logs.end(), [&](const auto& l) { return l.ranks == ranks; });
  const topo::ClusterGraph graph(topo::load_cluster("nd-a100-v4", std::max(1, ranks / 8), {}));
  CollectiveOptions options;
  options.gpus_per_thread = log->gpus_per_thread;
  std::vector<CollectivePlan> plans;
  for (const auto& [bytes, time_us] : log->bytes_and_time_us)
    plans.push_back(plan_collective(graph.spec(), CollectiveOp::AllReduce, testing::first_gpus(ranks), bytes, options));
  std::vector<const CollectivePlan*> stream;
  for (const auto& p : plans)
    stream.push_back(&p);
  const SimgridPlatform platform(graph, flow_pairs(stream));
  const auto timings = run_collective_streams(platform, graph, {stream});
  std::vector<double> errors;
  for (size_t i = 0; i < plans.size(); ++i) {
    const double t = nccl_back_to_back_call_s(timings[0][i].duration_s(), plans[i].host_issue_s);
    errors.push_back(std::abs(t / (log->bytes_and_time_us[i].second * 1e-6) - 1));
  }
  std::sort(errors.begin(), errors.end());
  LogError e;
  e.within_15_percent =
      static_cast<double>(std::count_if(errors.begin(), errors.end(), [](double x) { return x <= 0.15; })) /
      static_cast<double>(errors.size());
  const size_t m = errors.size();
  e.median_abs_error = m % 2 ? errors[m / 2] : 0.5 * (errors[m / 2 - 1] + errors[m / 2]);
  return e;
}

// One test per GPU count (one SimGrid platform per process). Bounds: today's result, rounded down/up.
TEST(NcclEchoValidation, TwoA100OneThread)
{
  const LogError e = simulate_log(2);
  EXPECT_GE(e.within_15_percent, 0.99); // 28 of 28 sizes
  EXPECT_LE(e.median_abs_error, 0.025); // 2.0%
}
TEST(NcclEchoValidation, EightA100OneThread)
{
  const LogError e = simulate_log(8);
  EXPECT_GE(e.within_15_percent, 0.99); // 28 of 28
  EXPECT_LE(e.median_abs_error, 0.02); // 1.5%
}
TEST(NcclEchoValidation, SixteenA100TwoNodes)
{
  const LogError e = simulate_log(16);
  EXPECT_GE(e.within_15_percent, 0.95); // 22 of 23 (8 MiB +16%)
  EXPECT_LE(e.median_abs_error, 0.04); // 3.4%
}
TEST(NcclEchoValidation, ThirtyTwoA100FourNodes)
{
  const LogError e = simulate_log(32);
  EXPECT_GE(e.within_15_percent, 0.95); // 22 of 23 (the 2 KiB warm-up outlier)
  EXPECT_LE(e.median_abs_error, 0.045); // 4.1%
}
TEST(NcclEchoValidation, SixtyFourA100EightNodes)
{
  const LogError e = simulate_log(64);
  EXPECT_GE(e.within_15_percent, 0.95); // 22 of 23 (1 KiB warm-up)
  EXPECT_LE(e.median_abs_error, 0.04); // 3.7%
}
TEST(NcclEchoValidation, HundredTwentyEightA100SixteenNodes)
{
  const LogError e = simulate_log(128);
  EXPECT_GE(e.within_15_percent, 0.91); // 21 of 23 (1 KiB warm-up, 16 KiB)
  EXPECT_LE(e.median_abs_error, 0.04); // 3.4%
}

} // namespace
} // namespace gputwin::sim
