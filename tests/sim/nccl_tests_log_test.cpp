// nccl-tests log parsing, NCCL's channel reduction for small messages, the host issue bound, and the fit.
#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/nccl_cost.hpp"
#include "gputwin/sim/nccl_fit.hpp"
#include "gputwin/sim/nccl_tests_log.hpp"

#include <gtest/gtest.h>

#include <sstream>

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
