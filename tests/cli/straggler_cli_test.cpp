// `gputwin simulate --slow-gpu/--slow-node` through the real binary: the report repeats the stragglers beside the
// cluster, the iteration slows down, and bad input is one line naming the flag with exit status 2.
#include "json_report.hpp"
#include "run_cli.hpp"

#include <gtest/gtest.h>

namespace gputwin::testing {
namespace {

const std::string small = "simulate --hidden 1024 --heads 16 --layers 8 --seq-len 1024 --vocab 51200 --tp 2 --pp 4 "
                          "--dp 2 --global-batch 16 --json";

TEST(StragglerCli, JsonRepeatsTheStragglersBesideTheCluster)
{
  const CliResult healthy = run_gputwin(small, false);
  ASSERT_EQ(healthy.exit_code, 0);
  const traces::JsonValue h = traces::parse_json(healthy.output);
  EXPECT_EQ(h.find("stragglers"), nullptr); // reports without the flags are unchanged

  for (const std::string estimate : {"", " --estimate"}) {
    SCOPED_TRACE(estimate);
    const CliResult slow = run_gputwin(small + " --slow-gpu 11=0.5 --slow-node 0=0.8" + estimate, false);
    ASSERT_EQ(slow.exit_code, 0);
    const traces::JsonValue j = traces::parse_json(slow.output);
    const traces::JsonValue& s = member(j, "stragglers");
    ASSERT_EQ(member(s, "slow_gpus").items.size(), 1u);
    EXPECT_EQ(number(member(s, "slow_gpus").items[0], "rank"), 11);
    EXPECT_EQ(number(member(s, "slow_gpus").items[0], "factor"), 0.5);
    ASSERT_EQ(member(s, "slow_nodes").items.size(), 1u);
    EXPECT_EQ(number(member(s, "slow_nodes").items[0], "node"), 0);
    EXPECT_EQ(member(s, "gpu_speeds").items.size(), 9u); // node 0's 8 GPUs and rank 11
    EXPECT_EQ(number(s, "simulated_programs"), 16);      // 4 stages x 2 replica classes x 2 tp classes
    // The cluster section comes first, the stragglers right after it.
    EXPECT_LT(slow.output.find("\"cluster\""), slow.output.find("\"stragglers\""));
    EXPECT_GT(number(j, "iteration_time_s"), number(h, "iteration_time_s") * 1.05);
  }
}

TEST(StragglerCli, BadInputIsOneLineNamingTheFlagExit2)
{
  const std::vector<std::pair<std::string, std::string>> cases = {
      {" --slow-gpu 0=0", "--slow-gpu 0=0: FACTOR must be in (0, 1]"},
      {" --slow-gpu 0=-1", "--slow-gpu 0=-1: FACTOR must be in (0, 1]"},
      {" --slow-gpu 0=2", "--slow-gpu 0=2: FACTOR must be in (0, 1]"},
      {" --slow-gpu 16=0.5", "--slow-gpu: rank 16 is not in the job (ranks 0-15)"},
      {" --slow-gpu zero=0.5", "--slow-gpu: expected RANK=FACTOR"},
      {" --slow-gpu 3", "--slow-gpu: expected RANK=FACTOR"},
      {" --slow-gpu 3=0.5 --slow-gpu 3=0.7", "--slow-gpu: rank 3 given twice"},
      {" --slow-node 2=0.5", "--slow-node: node 2 is not in the job (nodes 0-1"},
      {" --slow-node 1=0", "--slow-node 1=0: FACTOR must be in (0, 1]"},
      {" --slow-node x", "--slow-node: expected NODE=FACTOR"},
      {" --slow-gpu 0=4.9e-324", "--slow-gpu"}, // SimGrid aborted: "timeout is not finite"
      {" --slow-node 0=1e-300 --slow-gpu 0=1e-300", "--slow-gpu 0=1e-300: FACTOR below the floor of 1e-06"},
      {" --slow-node 0=1e-300", "--slow-node 0=1e-300: FACTOR below the floor of 1e-06"},
      {" --slow-gpu 0=0x1", "--slow-gpu: expected RANK=FACTOR"},
      {" --slow-node 0=1e-3 --slow-gpu 0=1e-4", "--slow-gpu: rank 0 runs at GPU factor x node factor = 1e-07"},
      {" --slow-node 0=1e-3 --slow-gpu 0=1e-4 --estimate", "below the floor of 1e-06 of normal speed"},
      {" --slow-gpu 0=0.5 --chakra /tmp/gputwin-straggler-chakra", "--slow-gpu: not with --chakra"},
  };
  for (const auto& [flags, expected] : cases) {
    expect_one_line_error(small + flags, expected);
    EXPECT_EQ(run_gputwin(small + flags, true).exit_code, 2) << flags;
  }
}

} // namespace
} // namespace gputwin::testing
