// The multi-process trainer without a GPU: `gputwin-engine launch --nproc 4 -- gputwin-engine train ... --comm tcp`
// (one process per rank, TCP between them, the rendezvous, every rank's report merged by rank 0) prints exactly
// the losses and memory the threaded run of the same plan prints, and writes a trace of all four ranks that
// loads (and replays, where this build has `gputwin`). Bad input is one line, exit status 2.
#include "cli/run_cli.hpp"
#include "gputwin/traces/trace_io.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {

using gputwin::testing::CliResult;

const std::string tiny = "--hidden 32 --heads 2 --layers 4 --seq-len 16 --vocab 64 --steps 3 ";

std::string fresh_directory()
{
  std::string pattern = ::testing::TempDir() + "tcp-train-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr)
    throw std::runtime_error("mkdtemp failed");
  return pattern;
}

// The lines of `report` that must not depend on how the ranks ran: each step's loss (the text after "loss ",
// up to the time) and the memory lines.
std::vector<std::string> deterministic_lines(const std::string& report)
{
  std::vector<std::string> kept;
  std::istringstream in(report);
  for (std::string line; std::getline(in, line);) {
    const size_t loss = line.find("  loss ");
    if (line.rfind("step ", 0) == 0 && loss != std::string::npos)
      kept.push_back(line.substr(0, line.find("  time ")));
    else if (line.rfind("activation bytes saved per layer", 0) == 0 || line.rfind("stage 0 peak", 0) == 0 ||
             line.rfind("rank 0 peak bytes", 0) == 0)
      kept.push_back(line);
  }
  return kept;
}

void expect_processes_match_threads(const std::string& plan, int processes)
{
  SCOPED_TRACE(plan);
  const CliResult threads = gputwin::testing::run_program(GPUTWIN_ENGINE_CLI, "train " + tiny + plan, false);
  ASSERT_EQ(threads.exit_code, 0) << threads.output;
  const std::string trace = fresh_directory() + "/trace.json";
  const CliResult tcp = gputwin::testing::run_program(
      GPUTWIN_ENGINE_CLI,
      "launch --nproc " + std::to_string(processes) + " -- " + GPUTWIN_ENGINE_CLI + " train " + tiny + plan +
          " --comm tcp --trace '" + trace + "'",
      false);
  ASSERT_EQ(tcp.exit_code, 0) << tcp.output;
  EXPECT_NE(tcp.output.find(" ranks as processes over TCP (gputwin-engine launch)"), std::string::npos) << tcp.output;
  const std::vector<std::string> expected = deterministic_lines(threads.output), got = deterministic_lines(tcp.output);
  ASSERT_EQ(got.size(), 6u) << tcp.output; // 3 steps and 3 memory lines, printed once (by rank 0)
  EXPECT_EQ(got, expected) << "threads:\n" << threads.output << "\ntcp:\n" << tcp.output;

  const gputwin::traces::OpGraph graph = gputwin::traces::read_op_graph_file(trace);
  ASSERT_EQ(graph.ranks.size(), static_cast<size_t>(processes));
  for (const gputwin::traces::RankProgram& rank : graph.ranks)
    EXPECT_FALSE(rank.ops.empty());
#ifdef GPUTWIN_CLI
  const CliResult replay = gputwin::testing::run_program(GPUTWIN_CLI, "replay '" + trace + "' --json", true);
  EXPECT_EQ(replay.exit_code, 0) << replay.output;
#endif
}

TEST(TcpTrain, FourProcessesPrintTheThreadedRunsLossesExactly)
{
  expect_processes_match_threads("--tp 2 --pp 2 --sp --recompute selective --global-batch 4", 4);
}

TEST(TcpTrain, DataParallelProcessesMatchToo)
{
  expect_processes_match_threads("--dp 2 --global-batch 4", 2);
}

TEST(TcpTrain, BadInputIsOneLine)
{
  for (const auto& [arguments, expected] : std::vector<std::pair<std::string, std::string>>{
           {"train " + tiny + "--comm tcp", "--comm tcp: no rank in the environment; expected GPUTWIN_RANK"},
           {"train " + tiny + "--comm tcp --backend cuda", "--comm tcp: expected --backend cpu"},
           {"launch --nproc 2 -- " + std::string(GPUTWIN_ENGINE_CLI) + " train " + tiny + "--tp 2 --pp 2 --comm tcp",
            "GPUTWIN_WORLD_SIZE: 2 processes, but the plan needs dp x pp x tp = 4"}}) {
    SCOPED_TRACE(arguments);
    const CliResult r = gputwin::testing::run_program(GPUTWIN_ENGINE_CLI, arguments, true);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("error: " + expected), std::string::npos) << r.output;
  }
}

} // namespace
