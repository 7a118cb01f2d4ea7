// `gputwin sweep --merge` joins only the shards of one sweep: every CSV starts with the sweep's identity line
// (`# gputwin sweep HASH shard K/N of P points: FLAGS`), and the merge refuses a shard of another sweep, a shard
// given twice, a missing shard, a whole sweep mixed with shards, and a file without the line -- one line, exit 2,
// naming the file and what was expected. A good merge is byte for byte the unsharded CSV.
#include "run_cli.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace gputwin::testing {
namespace {

// Two points (8 and 16 GPUs of a 12-layer gpt-22b), about a second.
const std::string two_points =
    "sweep --model gpt-22b --layers 12 --cluster dgx-a100 --gpus 8,16 --global-batch 16 --tokens 1e9";

// Runs `arguments --csv NAME` and returns the file's path.
std::string sweep_file(const std::string& arguments, const std::string& name)
{
  const std::string csv = test_temp_path(name);
  std::remove(csv.c_str());
  const CliResult r = run_gputwin(arguments + " --csv '" + csv + "'", false);
  EXPECT_EQ(r.exit_code, 0) << arguments << "\n" << r.output;
  return csv;
}

void expect_merge_error(const std::string& files, const std::string& expected)
{
  expect_one_line_error("sweep --merge " + files, expected);
  EXPECT_EQ(run_gputwin("sweep --merge " + files, true).exit_code, 2) << files;
}

TEST(SweepMergeIdentity, ShardsOfOneSweepMergeAndAnythingElseIsRefused)
{
  const std::string whole = sweep_file(two_points, "id-whole.csv");
  const std::string one = sweep_file(two_points + " --shard 1/2", "id-1.csv");
  const std::string two = sweep_file(two_points + " --shard 2/2", "id-2.csv");
  const std::string other = sweep_file(two_points + " --tokens 2e9 --shard 2/2", "id-other.csv");
  const std::string first_line = read_file(whole).substr(0, read_file(whole).find('\n'));
  EXPECT_EQ(first_line.rfind("# gputwin sweep ", 0), 0u) << first_line;
  EXPECT_NE(first_line.find(" shard 1/1 of 2 points: --model gpt-22b --layers 12 --cluster dgx-a100 --gpus 8,16 "
                            "--global-batch 16 --tokens 1e9"),
            std::string::npos)
      << first_line;
  const std::string hash = first_line.substr(16, 16);
  EXPECT_EQ(read_file(one).rfind("# gputwin sweep " + hash + " shard 1/2 of 2 points: ", 0), 0u) << read_file(one);
  // The identity is of the flags, not of the run: the same sweep run again writes the same bytes.
  EXPECT_EQ(read_file(sweep_file(two_points + " --shard 1/2 --jobs 2", "id-1-again.csv")), read_file(one));

  // Good: both shards, in either order, give the unsharded CSV (its identity line included).
  EXPECT_EQ(run_gputwin("sweep --merge '" + two + "' '" + one + "'", false).output, read_file(whole));
  EXPECT_EQ(run_gputwin("sweep --merge '" + whole + "'", false).output, read_file(whole));

  expect_merge_error("'" + one + "'", "--merge: shard 2/2 of sweep " + hash +
                                          " is missing (expected 2 files, one per shard; got 1/2)");
  expect_merge_error("'" + one + "' '" + two + "' '" + one + "'",
                     "--merge: " + one + ":1: shard 1/2 is also " + one + " (expected each shard once)");
  expect_merge_error("'" + one + "' '" + other + "'",
                     "--merge: " + other + ":1: a shard of another sweep than " + one + "'s");
  expect_merge_error("'" + one + "' '" + other + "'", "--tokens 2e9");
  expect_merge_error("'" + one + "' '" + whole + "'",
                     "--merge: " + whole + ":1: shard 1/1 but " + one + " is shard 1/2 (expected the 2 shards");
  // A CSV without the line (an older gputwin, or written by hand).
  const std::string bare = test_temp_path("id-bare.csv");
  const std::string content = read_file(one);
  std::ofstream(bare, std::ios::binary) << content.substr(content.find('\n') + 1);
  expect_merge_error("'" + bare + "'", "--merge: " + bare + ":1: not the identity line of a sweep CSV (expected the "
                                       "first line gputwin sweep --csv writes, '# gputwin sweep HASH shard K/N");
  std::ofstream(bare, std::ios::binary) << "# gputwin sweep 12345 shard 1/1 of 2 points: x\n";
  expect_merge_error("'" + bare + "'", "the hash '12345' is not 16 hex digits");
  for (const std::string& f : {whole, one, two, other, bare})
    std::remove(f.c_str());
}

} // namespace
} // namespace gputwin::testing
