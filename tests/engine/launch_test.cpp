// `gputwin-engine launch` through the built binary, with /bin/sh as the ranks: each rank sees its own
// environment, a failing rank stops its siblings (even one that ignores SIGTERM) within seconds, a signal to
// the launcher reaches the ranks, and bad input is one line on stderr.
#include "cli/run_cli.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

using gputwin::testing::CliResult;
using Clock = std::chrono::steady_clock;

CliResult launch(const std::string& arguments, bool capture_stderr = true)
{
  return gputwin::testing::run_program(GPUTWIN_ENGINE_CLI, "launch " + arguments, capture_stderr);
}

std::string fresh_directory()
{
  std::string pattern = ::testing::TempDir() + "launch-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed");
  return pattern;
}

std::string read_file(const std::string& path)
{
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

TEST(Launch, EveryRankSeesItsOwnRankAndTheSameRun)
{
  const std::string out = fresh_directory();
  const CliResult r = launch("--nproc 3 -- /bin/sh -c 'echo \"$GPUTWIN_RANK $GPUTWIN_WORLD_SIZE $GPUTWIN_LOCAL_RANK "
                             "$GPUTWIN_RUN_ID\" > \"" +
                             out + "/$GPUTWIN_RANK\"; test -d \"$GPUTWIN_RENDEZVOUS_DIR\"'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "");
  std::string run_id;
  for (int rank = 0; rank < 3; ++rank) {
    const std::string line = read_file(out + "/" + std::to_string(rank));
    const std::string expected = std::to_string(rank) + " 3 " + std::to_string(rank) + " run-";
    EXPECT_EQ(line.rfind(expected, 0), 0u) << line;
    const std::string id = line.substr(line.rfind(' ') + 1);
    if (rank == 0)
      run_id = id;
    EXPECT_EQ(id, run_id); // one run id for all ranks
  }
}

TEST(Launch, AFailingRankStopsASiblingThatSleepsForever)
{
  const Clock::time_point start = Clock::now();
  const CliResult r = launch("--nproc 3 --grace-seconds 1 -- /bin/sh -c "
                             "'if [ \"$GPUTWIN_RANK\" = 1 ]; then sleep 0.2; exit 3; fi; sleep 1000'");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(8)) << "the sleeping ranks were not stopped";
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("gputwin-engine launch: rank 1 (pid "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(") exited with status 3; stopping the other 2 ranks"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "expected one line:\n" << r.output;
}

TEST(Launch, ASiblingThatIgnoresSigtermIsKilledAfterTheGracePeriod)
{
  const Clock::time_point start = Clock::now();
  const CliResult r = launch("--nproc 2 --grace-seconds 1 -- /bin/sh -c "
                             "'if [ \"$GPUTWIN_RANK\" = 0 ]; then sleep 0.2; kill -SEGV $$; fi; trap \"\" TERM; "
                             "sleep 1000'");
  const auto elapsed = Clock::now() - start;
  EXPECT_LT(elapsed, std::chrono::seconds(8)) << "the rank that ignores SIGTERM was not killed";
  EXPECT_GE(elapsed, std::chrono::milliseconds(900)) << "SIGKILL came before the grace period";
  EXPECT_EQ(r.exit_code, 128 + 11) << r.output;
  EXPECT_NE(r.output.find("rank 0 (pid "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("was killed by signal 11"), std::string::npos) << r.output;
}

TEST(Launch, SigtermToTheLauncherReachesTheRanks)
{
  const Clock::time_point start = Clock::now();
  const CliResult r = gputwin::testing::run_program(
      "/bin/sh",
      "-c '\"" + std::string(GPUTWIN_ENGINE_CLI) +
          "\" launch --nproc 2 -- sleep 1000 & pid=$!; sleep 0.3; kill -TERM $pid; wait $pid; echo \"status $?\"'",
      false);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(8)) << "the ranks did not get the launcher's SIGTERM";
  EXPECT_EQ(r.output, "status 143\n");
}

TEST(Launch, ACommandThatCannotRunFails)
{
  const CliResult r = launch("--nproc 2 -- /nonexistent/program");
  EXPECT_EQ(r.exit_code, 127) << r.output;
  EXPECT_NE(r.output.find("cannot run '/nonexistent/program'"), std::string::npos) << r.output;
}

TEST(Launch, BadInputIsOneLine)
{
  for (const auto& [arguments, expected] :
       std::vector<std::pair<std::string, std::string>>{{"--nproc 2", "expected '--' and the command to run"},
                                                        {"-- /bin/true", "--nproc: expected the number of ranks"},
                                                        {"--nproc 0 -- /bin/true", "--nproc: expected a number of ranks"},
                                                        {"--nproc 2 --rendezvous /nonexistent/dir -- /bin/true",
                                                         "--rendezvous: cannot make a directory under /nonexistent"}}) {
    const CliResult r = launch(arguments);
    EXPECT_EQ(r.exit_code, 2) << arguments << "\n" << r.output;
    EXPECT_NE(r.output.find("gputwin-engine launch: error: " + expected), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "expected one line:\n" << r.output;
  }
}

TEST(Launch, TrainWithNcclWithoutAGpuFailsInEveryRank)
{
  // Each rank stops with exit status 2 and its one-line reason; the launcher passes the status on.
  const CliResult probe = gputwin::testing::run_program(
      GPUTWIN_ENGINE_CLI, "train --hidden 64 --heads 4 --layers 2 --seq-len 16 --vocab 128 --backend cuda --steps 1",
      true);
  if (probe.exit_code == 0)
    GTEST_SKIP() << "a GPU is usable here: the nccl run is the gpu-labelled test's";
  const CliResult r = launch("--nproc 2 -- " + std::string(GPUTWIN_ENGINE_CLI) +
                             " train --hidden 64 --heads 4 --layers 2 --seq-len 16 --vocab 128 --tp 2 --backend cuda "
                             "--comm nccl --steps 1");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("gputwin-engine train: error: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("gputwin-engine launch: rank "), std::string::npos) << r.output;
}

} // namespace
