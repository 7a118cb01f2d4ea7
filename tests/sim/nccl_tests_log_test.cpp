// nccl-tests log parsing, NCCL's channel reduction for small messages, the host issue bound, and the fit.
#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/nccl_cost.hpp"
#include "gputwin/sim/nccl_fit.hpp"
#include "gputwin/sim/nccl_tests_log.hpp"
#include "gputwin/topologies/cluster_spec.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace gputwin::sim {
namespace {

const char* prefixed_log = "[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 1024 maxBytes 2048 step: 2(factor)\n"
                           "[1,0]<stdout>:#   Rank  0 Pid 1 on node-0 device  0 [0x00] A100-SXM4-40GB\n"
                           "[1,0]<stdout>:#   Rank  1 Pid 2 on node-1 device  0 [0x00] A100-SXM4-40GB\n"
                           "[1,0]<stdout>:        1024   256  float  sum   34.66   0.03   0.06  N/A   34.47\r\n"
                           "[1,0]<stdout>:        2048   512  float  sum   36.05   0.06   0.11  N/A   35.59\r\n";

TEST(NcclTestsLog, ReadsPrefixedLinesRanksAndOutOfPlaceTime)
{
  std::istringstream in(prefixed_log);
  const NcclTestsLog log = parse_nccl_tests_log(in, "x.log");
  EXPECT_EQ(log.ranks, 2);
  EXPECT_EQ(log.gpus_per_thread, 1);
  EXPECT_EQ(log.op, CollectiveOp::AllReduce);
  ASSERT_EQ(log.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(log.rows[1].bytes, 2048);
  EXPECT_DOUBLE_EQ(log.rows[1].time_s, 36.05e-6);
  EXPECT_EQ(log.rows[1].line, 5);
}

TEST(NcclTestsLog, BadInputNamesFileAndLine)
{
  std::istringstream bad(std::string(prefixed_log) + "   4096  1024  float  sum  fast  0.1 0.2 N/A 1\n");
  try {
    parse_nccl_tests_log(bad, "x.log");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("x.log:6:"), std::string::npos) << e.what();
  }
  std::istringstream empty("#   Rank  0 Pid 1 on node-0 device 0\n# Out of bounds values : 0 OK\n");
  EXPECT_THROW(parse_nccl_tests_log(empty, "e.log"), InputError);
  EXPECT_THROW(read_nccl_tests_log("/nonexistent/nccl.log"), InputError);
}

// The message of the InputError that parsing `text` throws ("" when it parses).
std::string parse_error(const std::string& text)
{
  std::istringstream in(text);
  try {
    parse_nccl_tests_log(in, "x.log");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const char* header_line = "# nThread 1 nGpus 1 minBytes 1024 maxBytes 2048 step: 2(factor)\n";
const char* data_lines = "        1024   256  float  sum   34.66   0.03   0.06  N/A   34.47\n"
                         "        2048   512  float  sum   36.05   0.06   0.11  N/A   35.59\n";

TEST(NcclTestsLog, OneRankIsRefused)
{
  const std::string one = std::string(header_line) + "#   Rank  0 Pid 1 on node-0 device  0 [0x00] A100\n" + data_lines;
  EXPECT_NE(parse_error(one).find("x.log: one rank"), std::string::npos) << parse_error(one);
}

TEST(NcclTestsLog, DamagedRankLinesAreRefused)
{
  const std::string rank0 = "#   Rank  0 Pid 1 on node-0 device  0 [0x00] A100\n";
  // A NUL byte where "Rank" was: the line would be read as a comment and the log as one of fewer ranks.
  const std::string nul =
      std::string(header_line) + rank0 + std::string("#   Ra") + '\0' + "k  1 Pid 2 on node-0 device 1\n" + data_lines;
  EXPECT_NE(parse_error(nul).find("x.log:3: a NUL byte"), std::string::npos) << parse_error(nul);
  const std::string skipped = std::string(header_line) + rank0 + "#   Rank  2 Pid 2 on node-0 device 1\n" + data_lines;
  EXPECT_NE(parse_error(skipped).find("x.log:3: expected '#  Rank 1"), std::string::npos) << parse_error(skipped);
  const std::string garbled = std::string(header_line) + rank0 + "#   Rank  1x Pid 2 on node-0 device 1\n" + data_lines;
  EXPECT_NE(parse_error(garbled).find("x.log:3: expected '#  Rank 1"), std::string::npos) << parse_error(garbled);
}

TEST(NcclTestsLog, RankHostsAreRead)
{
  std::istringstream in(prefixed_log);
  const NcclTestsLog log = parse_nccl_tests_log(in, "x.log");
  EXPECT_EQ(log.rank_hosts, (std::vector<std::string>{"node-0", "node-1"}));
}

TEST(NcclTestsLog, RanksMustSitOnHostsAsTheFitPlacesThem)
{
  // Two ranks on two hosts: the fit would place both on one 8-GPU node and fit NVLink to a network's times.
  std::istringstream two_hosts(prefixed_log);
  const NcclTestsLog spread = parse_nccl_tests_log(two_hosts, "x.log");
  try {
    check_rank_placement(spread, 8, "dgx-a100");
    FAIL() << "two hosts of one rank each accepted as one node";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("x.log: 2 ranks on 2 host(s) (node-0: 1, node-1: 1)"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(fit_nccl(topo::load_cluster("dgx-a100", 0, {}), {spread}), InputError);
  check_rank_placement(spread, 1, "one-gpu-nodes"); // one GPU per node: one rank per host is right
  // The Echo logs: 16 ranks, 8 on each of two hosts; 8 ranks on one host.
  check_rank_placement(read_nccl_tests_log(GPUTWIN_NCCL_LOG_DIR "/nccl_16.log"), 8, "dgx-a100");
  check_rank_placement(read_nccl_tests_log(GPUTWIN_NCCL_LOG_DIR "/nccl_8.log"), 8, "dgx-a100");
  EXPECT_THROW(check_rank_placement(read_nccl_tests_log(GPUTWIN_NCCL_LOG_DIR "/nccl_16.log"), 16, "x"), InputError);
}

TEST(NcclTestsLog, EchoLogsParse)
{
  const NcclTestsLog log = read_nccl_tests_log(GPUTWIN_NCCL_LOG_DIR "/nccl_16.log");
  EXPECT_EQ(log.ranks, 16);
  EXPECT_EQ(log.rows.size(), 25u);
  const NcclTestsLog eight = read_nccl_tests_log(GPUTWIN_NCCL_LOG_DIR "/nccl_8.log");
  EXPECT_EQ(eight.ranks, 8);
  EXPECT_EQ(eight.gpus_per_thread, 8);
}

TEST(NcclChannels, SmallMessagesUseFewerChannels)
{
  // Tree LL: 8 bytes per thread, 512 threads: one channel per 4 KiB.
  EXPECT_EQ(nccl_channels_used(NcclAlgorithm::Tree, NcclProtocol::LL, 16384, 128, 16), 4);
  EXPECT_EQ(nccl_channels_used(NcclAlgorithm::Tree, NcclProtocol::LL, 1 << 20, 128, 16), 16);
  // Ring LL: the threshold grows with the ranks (8 x 128 bytes per thread).
  EXPECT_EQ(nccl_channels_used(NcclAlgorithm::Ring, NcclProtocol::LL, 1 << 20, 128, 16), 2);
  EXPECT_EQ(nccl_channels_used(NcclAlgorithm::Ring, NcclProtocol::Simple, 8, 8, 24), 1);
}

TEST(NcclCost, TreeLlPaysTheNetworkAgainForEachFurtherLinePerThread)
{
  const topo::ClusterSpec cluster = topo::load_cluster("nd-a100-v4", 16, {});
  const topo::NcclProtocolSpec& ll = cluster.nccl.ll;
  auto tree_ll = [&](double bytes) {
    NcclCostInput in;
    in.algorithm = NcclAlgorithm::Tree;
    in.protocol = NcclProtocol::LL;
    in.bytes = bytes;
    in.ranks = 128;
    in.nodes = 16;
    return nccl_cost(cluster, in);
  };
  // 16 channels x 512 threads x 8 B = 64 KiB is one line per thread; 128 KiB two, 256 KiB four.
  const NcclCost one = tree_ll(64 * 1024), two = tree_ll(128 * 1024), four = tree_ll(256 * 1024);
  ASSERT_EQ(one.channels, 16);
  ASSERT_EQ(two.channels, 16);
  const int net_steps = 2 * 4; // up and down the tree across log2(16) node levels
  const double network_part_s =
      net_steps * ll.net_step_s + net_steps * cluster.nccl.channel_net_step_s * (1 + std::log2(16.0));
  EXPECT_NEAR(two.latency_s - one.latency_s, network_part_s, 1e-12);
  EXPECT_NEAR(four.latency_s - one.latency_s, 3 * network_part_s, 1e-12);
  // One LL step holds at most 8 lines per thread (512 KiB here); further steps are pipelined: no further passes.
  EXPECT_NEAR(tree_ll(512 * 1024).latency_s - one.latency_s, 7 * network_part_s, 1e-12);
  EXPECT_DOUBLE_EQ(tree_ll(64 << 20).latency_s, tree_ll(512 * 1024).latency_s);
  // Fewer channels than the maximum hold one line per thread at most: no extra steps below 64 KiB.
  const NcclCost small = tree_ll(32 * 1024);
  EXPECT_LT(small.channels, 16);
  EXPECT_LT(small.latency_s, one.latency_s);
  // LL128 moves whole 128-byte lines per warp: no extra steps.
  NcclCostInput ll128;
  ll128.algorithm = NcclAlgorithm::Tree;
  ll128.protocol = NcclProtocol::LL128;
  ll128.ranks = 128;
  ll128.nodes = 16;
  ll128.bytes = 128 * 1024;
  const NcclCost ll128_small = nccl_cost(cluster, ll128);
  ll128.bytes = 1024 * 1024;
  const NcclCost ll128_large = nccl_cost(cluster, ll128);
  ASSERT_EQ(ll128_small.channels, ll128_large.channels);
  EXPECT_DOUBLE_EQ(ll128_large.latency_s, ll128_small.latency_s);
}

TEST(NcclHost, OneThreadDrivingEightGpusBoundsSmallCalls)
{
  topo::NcclSpec nccl;
  nccl.host_call_s = 1e-6;
  nccl.host_launch_s_per_gpu = 4e-6;
  EXPECT_DOUBLE_EQ(nccl_host_issue_s(nccl, 8), 33e-6);
  EXPECT_DOUBLE_EQ(nccl_back_to_back_call_s(10e-6, nccl_host_issue_s(nccl, 8)), 33e-6);
  EXPECT_DOUBLE_EQ(nccl_back_to_back_call_s(50e-6, nccl_host_issue_s(nccl, 1)), 50e-6);
}

TEST(NcclFit, FitImprovesOnTheStartingPointAndIsDeterministic)
{
  const std::string dir = GPUTWIN_NCCL_LOG_DIR "/";
  const std::vector<NcclTestsLog> logs = {read_nccl_tests_log(dir + "nccl_2.log"),
                                          read_nccl_tests_log(dir + "nccl_16.log")};
  const topo::ClusterSpec start = topo::load_cluster("dgx-h100", 0, {});
  const NcclFit a = fit_nccl(start, logs);
  const NcclFit b = fit_nccl(start, logs);
  EXPECT_EQ(a.objective, b.objective);
  double start_median = 0;
  for (const NcclLogFit& f : nccl_log_errors(start, logs))
    start_median += f.median_abs_error;
  double fit_median = 0;
  for (const NcclLogFit& f : a.logs)
    fit_median += f.median_abs_error;
  EXPECT_LT(fit_median, start_median);
}

} // namespace
} // namespace gputwin::sim
