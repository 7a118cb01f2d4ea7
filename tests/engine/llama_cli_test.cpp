// `gputwin-engine train` with the Llama-style flags through the built binary: a single-rank Llama trace replays
// as measured within 1% (`gputwin replay TRACE --json`, where this build has `gputwin`), and every new flag's bad
// value, and every plan the engine cannot run yet, stops with one line naming the flag and exit status 2.
#include "cli/run_cli.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace {

using gputwin::testing::CliResult;

const std::string llama = "--hidden 128 --heads 4 --layers 4 --seq-len 64 --vocab 128 --num-query-groups 2 "
                          "--activation swiglu --norm rmsnorm --position rope --micro-batch 2 --global-batch 8 ";

TEST(EngineLlamaCli, SingleRankTraceReplaysAsMeasuredWithinOnePercent)
{
  const std::string trace = test_temp_path("trace.json");
  const CliResult r =
      gputwin::testing::run_program(GPUTWIN_ENGINE_CLI, "train " + llama + "--steps 4 --trace '" + trace + "'", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("step    4  loss "), std::string::npos) << r.output;
#ifdef GPUTWIN_CLI
  const CliResult replay = gputwin::testing::run_program(GPUTWIN_CLI, "replay '" + trace + "' --json", false);
  ASSERT_EQ(replay.exit_code, 0) << replay.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(replay.output, m, std::regex("\"relative_error\": ([-0-9.e+]+)"))) << replay.output;
  const double error = std::stod(m[1]);
  std::printf("  single-rank llama trace replayed as measured: relative error %.4f\n", error);
  EXPECT_LT(std::abs(error), 0.01) << replay.output;
#endif
}

TEST(EngineLlamaCli, BadValuesAndPlansTheEngineCannotRunAreOneLine)
{
  const std::string tiny = "train --hidden 64 --heads 4 --layers 4 --seq-len 16 --vocab 128 --steps 1 ";
  for (const auto& [flags, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--num-query-groups 3", "--num-query-groups: 4 heads"},
           {"--num-query-groups 0", "--num-query-groups: expected a positive integer"},
           {"--num-query-groups x", "--num-query-groups: expected an integer"},
           {"--num-query-groups 2 --tp 4", "--tp: 2 query groups"},
           {"--ffn-hidden 0", "--ffn-hidden: expected a positive integer"},
           {"--ffn-hidden 66 --tp 4", "--tp: MLP width 66 of model 'custom' is not divisible"},
           {"--activation relu", "--activation: expected gelu|swiglu|squared-relu"},
           {"--norm batchnorm", "--norm: expected layernorm|rmsnorm"},
           {"--position alibi", "--position: expected learned|rope"},
           {"--untie-embeddings=1", "--untie-embeddings: takes no value"},
           {"--no-bias=yes", "--no-bias: takes no value"},
           {"--no-dropout=1", "--no-dropout: takes no value"},
           {"--cp 2 --attention flash", "--cp: the engine does not run context parallelism yet"},
           {"--fp8", "--fp8: the engine does not run FP8 linear layers yet"}}) {
    SCOPED_TRACE(flags);
    const CliResult r = gputwin::testing::run_program(GPUTWIN_ENGINE_CLI, tiny + flags, true);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("error: " + expected), std::string::npos) << r.output;
    ASSERT_FALSE(r.output.empty());
    EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "expected one line:\n" << r.output;
  }
}

} // namespace
