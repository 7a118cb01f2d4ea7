// Held-out validation: the built-in dgx-a100 cluster's all-reduce against vTrain's measured NCCL all-reduce on
// 2-8 A100 of one node (1 MiB-1 GiB; tests/data/vtrain-allreduce-a100/README.md), a set nothing in gputwin was
// fitted to: dgx-a100's link efficiencies come from NVIDIA's large-message figures and its NCCL latencies from the
// fit to Echo's nccl-tests logs (nd-a100-v4). Sizes log-spaced (1, 2, 3, 4, 6, 8 ... 1024 MiB: 20 per N), one
// thread driving the N GPUs (how vTrain launched it is not recorded; at >= 1 MiB the host does not bind). The
// bounds asserted are what the model reaches today, rounded, so that a regression fails; the figures are in the
// README's validation table.
#include "dgx_spec.hpp"

#include "gputwin/sim/collective_executor.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace gputwin::sim {
namespace {

// Out-of-place time (seconds) per size (bytes) of one LUT file; fails the test on a malformed row.
std::map<double, double> read_lut(int ranks)
{
  const std::string path =
      std::string(GPUTWIN_VTRAIN_AR_DIR) + "/AR_GPU" + std::to_string(ranks) + "_1M_1024M_LUT.csv";
  std::ifstream in(path);
  EXPECT_TRUE(in) << path;
  std::map<double, double> time_s;
  std::string line;
  std::getline(in, line); // size(B),count,type,time(ns),busbw(GB/s),time(ns),busbw(GB/s)
  EXPECT_EQ(line.rfind("size(B),count,type,time(ns)", 0), 0u) << path;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string bytes, count, type, ns;
    std::getline(fields, bytes, ',');
    std::getline(fields, count, ',');
    std::getline(fields, type, ',');
    std::getline(fields, ns, ',');
    time_s[std::stod(bytes)] = std::stod(ns) * 1e-9;
  }
  EXPECT_EQ(time_s.size(), 1024u) << path;
  return time_s;
}

// 1, 2, 3, 4, 6, 8, 12 ... 768, 1024 MiB: powers of two and three times powers of two (the files step by 1 MiB).
std::vector<double> log_spaced_sizes()
{
  std::vector<double> sizes;
  for (double mib = 1; mib <= 1024; mib *= 2) {
    sizes.push_back(mib * (1 << 20));
    if (3 * mib <= 1024)
      sizes.push_back(3 * mib * (1 << 20));
  }
  std::sort(sizes.begin(), sizes.end());
  return sizes;
}

// One SimGrid platform per process: every size of every N in one stream, back to back (each call timed alone).
TEST(VtrainAllReduceValidation, TwoToEightA100OfOneNode)
{
  const topo::ClusterGraph graph(topo::load_cluster("dgx-a100", 1, {}));
  struct Row {
    int ranks;
    double measured_s;
    CollectivePlan plan;
  };
  std::vector<Row> rows;
  for (int ranks = 2; ranks <= 8; ++ranks) {
    const std::map<double, double> measured = read_lut(ranks);
    CollectiveOptions options;
    options.gpus_per_thread = ranks;
    for (const double bytes : log_spaced_sizes())
      rows.push_back({ranks, measured.at(bytes),
                      plan_collective(graph.spec(), CollectiveOp::AllReduce, testing::first_gpus(ranks), bytes, options)});
  }
  ASSERT_EQ(rows.size(), 7u * 20u);
  std::vector<const CollectivePlan*> stream;
  for (const Row& r : rows)
    stream.push_back(&r.plan);
  const SimgridPlatform platform(graph, flow_pairs(stream));
  const auto timings = run_collective_streams(platform, graph, {stream});

  std::map<int, std::vector<double>> errors; // |simulated / measured - 1| per N
  std::vector<double> all;
  for (size_t i = 0; i < rows.size(); ++i) {
    const double t = nccl_back_to_back_call_s(timings[0][i].duration_s(), rows[i].plan.host_issue_s);
    errors[rows[i].ranks].push_back(std::abs(t / rows[i].measured_s - 1));
    all.push_back(errors[rows[i].ranks].back());
  }
  auto within_15 = [](const std::vector<double>& e) {
    return static_cast<double>(std::count_if(e.begin(), e.end(), [](double x) { return x <= 0.15; })) /
           static_cast<double>(e.size());
  };
  auto median = [](std::vector<double> e) {
    std::sort(e.begin(), e.end());
    return 0.5 * (e[(e.size() - 1) / 2] + e[e.size() / 2]);
  };
  for (const auto& [ranks, e] : errors)
    std::printf("%d GPUs: %.0f of 20 within 15%%, median |error| %.1f%%, worst %.1f%%\n", ranks, 20 * within_15(e),
                100 * median(e), 100 * *std::max_element(e.begin(), e.end()));
  std::printf("all: %.1f%% within 15%%, median |error| %.1f%%\n", 100 * within_15(all), 100 * median(all));
  // Today 117 of 140 (83.6%) within 15%, median 6.3%; the stale NCCL defaults before Echo's fit gave 101 (72.1%),
  // 6.4%. The misses: 2 GPUs at 1-6 MiB (+15-38%) and 128-512 MiB (-16-17%); 1-4 MiB at 4-7 GPUs (+18-42%: the
  // ring LL128/Simple latency of Echo's NCCL is higher than this system's); 8 GPUs 1 MiB (-22%) and 6 MiB (+16%).
  EXPECT_GE(within_15(all), 0.83);
  EXPECT_LE(median(all), 0.065);
  for (const auto& [ranks, e] : errors)
    EXPECT_LE(median(e), ranks == 2 ? 0.16 : 0.09) << ranks << " GPUs";
}

} // namespace
} // namespace gputwin::sim
