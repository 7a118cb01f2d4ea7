// The shared cluster flags: --cluster (default dgx-a100), --nodes, repeatable --set.
#include "gputwin/common/input_error.hpp"
#include "gputwin/topologies/cluster_flags.hpp"

#include <gtest/gtest.h>

namespace gputwin::topo {
namespace {

ClusterSpec cluster_from(const std::vector<std::string>& args)
{
  cli::ArgParser parser("gputwin test", "test");
  add_cluster_flags(parser);
  return read_cluster(parser.parse(args));
}

std::string error_of(const std::vector<std::string>& args)
{
  try {
    cluster_from(args);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ClusterFlags, DefaultIsOneDgxA100Node)
{
  const ClusterSpec spec = cluster_from({});
  EXPECT_EQ(spec.name, "dgx-a100");
  EXPECT_EQ(spec.nodes, 1);
}

TEST(ClusterFlags, ClusterNodesAndRepeatedSet)
{
  const ClusterSpec spec = cluster_from({"--cluster", "dgx-h100", "--nodes=16", "--set", "node.nvlink.gbytes_per_s=400",
                                         "--set", "fabric.oversubscription=3"});
  EXPECT_EQ(spec.name, "dgx-h100");
  EXPECT_EQ(spec.nodes, 16);
  EXPECT_DOUBLE_EQ(spec.nvlink.bytes_per_s, 400e9);
  EXPECT_DOUBLE_EQ(spec.fabric.oversubscription, 3);
  EXPECT_EQ(cluster_from({"--cluster", GPUTWIN_TEST_DATA_DIR "/clusters/tiny.yaml"}).name, "tiny");
}

TEST(ClusterFlags, BadNodesNameTheFlag)
{
  EXPECT_EQ(error_of({"--nodes", "0"}), "--nodes: expected a positive integer, got 0");
  EXPECT_EQ(error_of({"--nodes", "-4"}), "--nodes: expected a positive integer, got -4");
  EXPECT_EQ(error_of({"--nodes", "two"}), "--nodes: expected an integer, got 'two'");
  EXPECT_EQ(error_of({"--nodes", "4000000000"}), "--nodes: expected a positive integer, got 4000000000");
  EXPECT_EQ(error_of({"--nodes", "2000000"}), "--nodes: expected an integer from 1 to 1048576, got 2000000");
  EXPECT_EQ(error_of({"--nodes", "200000"}),
            "--nodes: 200000 nodes of 8 GPUs exceed the 1048576 GPUs gputwin builds (expected fewer --nodes)");
}

} // namespace
} // namespace gputwin::topo
