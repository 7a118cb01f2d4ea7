// GPU test (ctest label `gpu`): `gputwin-engine launch -- train --backend cuda --comm nccl` against the same
// plan run in-process on the GPU. One GPU: a one-rank run (NCCL init, splits, barriers); two or more: tp 2 and
// pp 2 over two processes (collectives and pipeline send/recv on device memory). NCCL reduces in its own order,
// so losses match to a tolerance, not bit for bit. Skipped, saying why, where no GPU can be used.
#include "cli/run_cli.hpp"
#include "cuda/device_query.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace gputwin::engine {
namespace {

using gputwin::testing::CliResult;

const std::string tiny = "--hidden 64 --heads 4 --layers 4 --seq-len 16 --vocab 128 --backend cuda --steps 3 ";

// The numbers after "loss " in the report, one per step.
std::vector<double> losses(const std::string& report)
{
  std::vector<double> result;
  for (size_t at = report.find("  loss "); at != std::string::npos; at = report.find("  loss ", at + 1))
    result.push_back(std::strtod(report.c_str() + at + 7, nullptr));
  return result;
}

int usable_gpus()
{
  try {
    return static_cast<int>(query_cuda_devices().size());
  } catch (const std::exception&) {
    return 0;
  }
}

void expect_same_losses(const std::string& plan, int processes)
{
  SCOPED_TRACE(plan);
  const CliResult threads = gputwin::testing::run_program(GPUTWIN_ENGINE_CLI, "train " + tiny + plan, false);
  ASSERT_EQ(threads.exit_code, 0) << threads.output;
  const CliResult nccl = gputwin::testing::run_program(
      GPUTWIN_ENGINE_CLI,
      "launch --nproc " + std::to_string(processes) + " -- " + GPUTWIN_ENGINE_CLI + " train " + tiny + plan +
          " --comm nccl",
      false);
  ASSERT_EQ(nccl.exit_code, 0) << nccl.output;
  EXPECT_NE(nccl.output.find("ranks as processes over NCCL"), std::string::npos) << nccl.output;
  const std::vector<double> expected = losses(threads.output), got = losses(nccl.output);
  ASSERT_EQ(got.size(), 3u) << nccl.output;
  ASSERT_EQ(expected.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], expected[i], 2e-3 * std::abs(expected[i]) + 1e-3) << "step " << i + 1;
}

TEST(NcclTrain, OneRankMatchesTheInProcessRun)
{
  if (usable_gpus() < 1)
    GTEST_SKIP() << "no usable CUDA device on this machine";
  expect_same_losses("", 1);
}

TEST(NcclTrain, TwoProcessesMatchTheInProcessRun)
{
  if (usable_gpus() < 2)
    GTEST_SKIP() << "NCCL needs one GPU per rank: fewer than 2 usable GPUs here";
  expect_same_losses("--tp 2", 2);
  expect_same_losses("--pp 2 --global-batch 4", 2);
  expect_same_losses("--dp 2 --global-batch 4", 2);
}

} // namespace
} // namespace gputwin::engine
