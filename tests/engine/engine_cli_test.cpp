// gputwin-engine through the built binary, as a user runs it: a short training run, and bad input that must
// stop with one clear line and a non-zero exit status.
#include "cli/run_cli.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <sys/wait.h>

namespace {

using gputwin::testing::CliResult;

CliResult run_engine(const std::string& arguments, bool capture_stderr)
{
  return gputwin::testing::run_program(GPUTWIN_ENGINE_CLI, arguments, capture_stderr);
}

const std::string tiny = "--hidden 64 --heads 4 --layers 4 --seq-len 16 --vocab 128 ";

// Exit status 2 and exactly one line on stderr, starting as the CLI's errors do and containing `expected`.
void expect_one_line_error(const std::string& arguments, const std::string& expected)
{
  const CliResult r = run_engine(arguments, true);
  EXPECT_EQ(r.exit_code, 2) << arguments << "\n" << r.output;
  EXPECT_NE(r.output.find(expected), std::string::npos) << arguments << "\n" << r.output;
  EXPECT_EQ(r.output.find("error: "), r.output.find(": error: ") + 2) << r.output;
  ASSERT_FALSE(r.output.empty());
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "expected one line:\n" << r.output;
}

TEST(EngineCli, TrainsPrintsLossTimeAndTable2)
{
  const std::string trace = test_temp_path("trace.json");
  const std::string timeline = test_temp_path("timeline.json");
  const CliResult r = run_engine("train " + tiny + "--tp 2 --sp --recompute selective --steps 4 --trace " + trace +
                                     " --timeline " + timeline,
                                 false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("step    4  loss "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("iteration time: median "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("measured 17408, paper Table 2 17408 (equal)"), std::string::npos) << r.output;
  const CliResult converted = run_engine("trace-to-perfetto " + trace + " " + timeline + ".2", false);
  EXPECT_EQ(converted.exit_code, 0) << converted.output;
  std::ifstream a(timeline), b(timeline + ".2");
  const std::string ta((std::istreambuf_iterator<char>(a)), {}), tb((std::istreambuf_iterator<char>(b)), {});
  EXPECT_EQ(ta, tb);
  EXPECT_EQ(ta.rfind("{\"displayTimeUnit\":\"ns\"", 0), 0u);
}

TEST(EngineCli, PlansThatDoNotDivideAreRejected)
{
  expect_one_line_error("train " + tiny + "--tp 3", "--tp: 4 attention heads");
  expect_one_line_error("train " + tiny + "--pp 3", "--pp: 4 layers");
  expect_one_line_error("train " + tiny + "--pp 2 --schedule interleaved --chunks 4 --global-batch 4",
                        "--chunks: 4 layers are not divisible by pp x chunks");
  expect_one_line_error("train " + tiny + "--dp 2 --micro-batch 2 --global-batch 6",
                        "--global-batch: 6 is not divisible by micro-batch x dp");
  expect_one_line_error("train " + tiny + "--steps 0", "--steps: expected a positive integer");
}

TEST(EngineCli, PlansOverTheMemoryLimitAreRejectedBeforeAllocating)
{
  // The memory model predicts 2 MiB per rank of this model, 4 MiB for two: 1 MiB is too little, 1 GiB enough.
  expect_one_line_error("train " + tiny + "--tp 2 --steps 1 --memory-limit-gib 0.001",
                        "the plan does not fit on the host: the memory model predicts");
  expect_one_line_error("train " + tiny + "--steps 1 --memory-limit-gib 0",
                        "--memory-limit-gib: expected a number in");
  EXPECT_EQ(run_engine("train " + tiny + "--tp 2 --steps 1 --memory-limit-gib 1", false).exit_code, 0);
}

TEST(EngineCli, UnknownAndUnbuiltBackendsAreRejected)
{
  expect_one_line_error("train " + tiny + "--backend tpu", "--backend: unknown backend 'tpu' (expected cpu");
#ifdef GPUTWIN_ENGINE_HAS_CUDA
  // Built with CUDA: where no GPU can be used, the device query's reason in one line (a GPU machine trains).
  if (run_engine("train " + tiny + "--backend cuda --steps 1", true).exit_code != 0)
    expect_one_line_error("train " + tiny + "--backend cuda", "--backend cuda: no usable GPU");
#else
  expect_one_line_error("train " + tiny + "--backend cuda", "the CUDA backend is not built yet");
#endif
}

TEST(EngineCli, NcclNeedsABuildWithNcclAGpuAndTheLauncher)
{
  expect_one_line_error("train " + tiny + "--comm mpi", "--comm: unknown communicator 'mpi' (expected inprocess, nccl or tcp)");
  expect_one_line_error("train " + tiny + "--rendezvous /tmp", "--rendezvous: expected only with --comm nccl");
#ifdef GPUTWIN_ENGINE_HAS_NCCL
  expect_one_line_error("train " + tiny + "--comm nccl", "--comm nccl: expected --backend cuda");
  if (run_engine("train " + tiny + "--backend cuda --steps 1", true).exit_code != 0)
    expect_one_line_error("train " + tiny + "--backend cuda --comm nccl", "no usable GPU");
  else // a GPU, but not started by the launcher: no rank in the environment
    expect_one_line_error("train " + tiny + "--backend cuda --comm nccl", "GPUTWIN_RANK");
#else
  expect_one_line_error("train " + tiny + "--comm nccl", "--comm nccl: this gputwin-engine was built without");
#endif
}

TEST(EngineCli, CorruptAndTruncatedTracesAreRejected)
{
  const std::string dir = ::testing::TempDir();
  const std::string trace = dir + "engine_cli_good.json";
  ASSERT_EQ(run_engine("train " + tiny + "--pp 2 --global-batch 2 --steps 1 --trace " + trace, false).exit_code, 0);
  std::ifstream in(trace);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  auto write = [&](const std::string& name, const std::string& content) {
    std::ofstream(dir + name) << content;
    return dir + name;
  };
  expect_one_line_error("trace-to-perfetto " + write("truncated.json", text.substr(0, text.size() / 2)) + " " + dir +
                            "out.json",
                        "truncated file?");
  std::string wrong_version = text;
  wrong_version.replace(wrong_version.find("\"format_version\":1"), 18, "\"format_version\":7");
  expect_one_line_error("trace-to-perfetto " + write("version.json", wrong_version) + " " + dir + "out.json",
                        "field 'format_version': expected 1");
  std::string bad_kind = text;
  bad_kind.replace(bad_kind.find("\"kind\":\"compute\""), 16, "\"kind\":\"kompute\"");
  expect_one_line_error("trace-to-perfetto " + write("kind.json", bad_kind) + " " + dir + "out.json",
                        "field 'kind': expected compute|collective|send|recv|memcpy, got 'kompute'");
  expect_one_line_error("trace-to-perfetto " + dir + "does-not-exist.json " + dir + "out.json",
                        "cannot open the trace file");
  expect_one_line_error("trace-to-perfetto onlyone.json", "expected two arguments");
}

} // namespace
