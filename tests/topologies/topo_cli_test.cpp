// Golden runs of `gputwin topo` through the real binary: JSON and table output, Graphviz, and bad input.
#include "../cli/run_cli.hpp"

#include <gtest/gtest.h>

namespace gputwin::testing {
namespace {

TEST(TopoCli, GoldenJsonForSixtyFourDgxA100Nodes)
{
  // Counts by hand in topology_summary_test.cpp (DgxA100SixtyFourNodes).
  const CliResult r = run_gputwin("topo --cluster dgx-a100 --nodes 64 --json", false);
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output, R"({
  "cluster": "dgx-a100",
  "nodes": 64,
  "gpus": 512,
  "gpus_per_node": 8,
  "nvlink_domain_gpus": 8,
  "nvlink_domains": 64,
  "nvswitch_chips": 384,
  "pcie_switches": 256,
  "nics": 512,
  "nics_per_node": 8,
  "fabric_switches_per_level": [
    32,
    20
  ],
  "fabric_switches": 52,
  "fabric_planes": 1,
  "adaptive_routing": false,
  "physical_links": 2688,
  "nvlink_gbps_per_gpu": 300,
  "injection_gbps_per_gpu": 25,
  "bisection_gbps": 6400
}
)");
}

TEST(TopoCli, TableOfThreeLevels)
{
  const CliResult r = run_gputwin("topo --nodes 128", false);
  ASSERT_EQ(r.exit_code, 0);
  for (const char* line : {"cluster          dgx-a100 (<built-in dgx-a100>)\n",
                           "GPU              a100-sxm4-80gb: 312 TFLOP/s bf16, 80 GiB HBM at 2039 GB/s\n",
                           "GPUs             1024 (8 per node)\n",
                           "fabric           3 levels: 56 leaves + 60 aggregation + 400 cores = 516 switches "
                           "(rail-optimized, radix 40, oversubscription 1)\n",
                           "physical links   6416 full-duplex (12832 directed)\n",
                           "bisection        12800 GB/s per direction (worst half/half cut of the nodes)\n"})
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\nin:\n" << r.output;
}

// Counts by hand in tier_oversubscription_test.cpp (AggregationTierThinsTheCoreUplinks).
TEST(TopoCli, TableOfOversubscriptionPerTier)
{
  const CliResult r = run_gputwin("topo --nodes 200 --set fabric.oversubscription=[1,3]", false);
  ASSERT_EQ(r.exit_code, 0);
  for (const char* line : {"fabric           3 levels: 80 leaves + 60 aggregation + 200 cores = 340 switches "
                           "(rail-optimized, radix 40, oversubscription 1 / 3)\n",
                           "bisection        7500 GB/s per direction (worst half/half cut of the nodes)\n"})
    EXPECT_NE(r.output.find(line), std::string::npos) << line << "\nin:\n" << r.output;
  const CliResult bad = run_gputwin("topo --nodes 200 --set fabric.oversubscription=[1,2,3]", true);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.output, "gputwin topo: error: --set fabric.oversubscription: expected a positive number or a list of 1 "
                        "to 2 positive numbers, e.g. [2, 1], got a list of 3\n");
}

TEST(TopoCli, BuiltinsWorkFromAnyDirectory)
{
  const std::string command = std::string("cd / && '") + GPUTWIN_CLI + "' topo --cluster dgx-h200 --json";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0)
    output.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0);
  EXPECT_NE(output.find("\"nvlink_gbps_per_gpu\": 450,"), std::string::npos) << output;
}

TEST(TopoCli, DotIsGraphviz)
{
  const CliResult r = run_gputwin("topo --cluster dgx-h100 --nodes 2 --dot", false);
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.output.rfind("graph \"dgx-h100\" {\n", 0), 0u);
  EXPECT_NE(r.output.find("\"n1.nic7\" -- \"leaf.r7.0\" [label=\"50 GB/s\"];"), std::string::npos);
}

TEST(TopoCli, BadInputExitsTwoWithOneLine)
{
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"topo --cluster nope",
       "gputwin topo: error: --cluster: unknown cluster 'nope' (expected one of dgx-a100, dgx-b200, dgx-b300, dgx-h100, dgx-h200, gb200-nvl72, gb300-nvl72, localhost, nd-a100-v4, or a "
       "cluster .yaml file)\n"},
      {"topo --nodes 0", "gputwin topo: error: --nodes: expected a positive integer, got 0\n"},
      {"topo --nodes 2 --set node.nics.count=0",
       "gputwin topo: error: cluster 'dgx-a100': disconnected topology: n1.gpu0 is unreachable from n0.gpu0 "
       "(expected NICs and a fabric joining the nodes)\n"},
      {"topo --set node.nvlink.gbytes_per_s=fast",
       "gputwin topo: error: --set node.nvlink.gbytes_per_s: expected a positive number, got 'fast'\n"},
      {"topo --json --dot", "gputwin topo: error: --dot: cannot be combined with --json (expected one of them)\n"},
      {"topo --cluster gb200-nvl72 --set node.nvlink.domain_gpus=70",
       "gputwin topo: error: --set node.nvlink.domain_gpus: 70 GPUs are not a whole number of 4-GPU nodes (expected "
       "a multiple of node.gpus)\n"},
  };
  for (const auto& [args, expected] : cases) {
    const CliResult r = run_gputwin(args, true);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.output, expected) << args;
  }
}

TEST(TopoCli, HelpHasAnExample)
{
  const CliResult r = run_gputwin("topo --help", false);
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("example: gputwin topo --cluster dgx-a100 --nodes 64"), std::string::npos);
  EXPECT_NE(r.output.find("--set KEY=VALUE"), std::string::npos) << r.output;
}

} // namespace
} // namespace gputwin::testing
