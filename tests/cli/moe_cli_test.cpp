// Mixture of experts through the command line as a user runs it: one-line errors for plans that cannot run, the
// report's MoE figures (the slowest EP rank under imbalance, the busiest link kind), determinism of the seeded
// imbalance, and search/sweep candidates carrying their expert layout. sim/README.md "Mixture of experts".
#include "json_report.hpp"
#include "run_cli.hpp"

#include "gputwin/traces/json_value.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gputwin::testing {
namespace {

// A small MoE model on one DGX H100: 2 layers of Mixtral's shape, 8 experts top-2.
const std::string small = "--model mixtral-8x7b --layers 2 --seq-len 1024 --cluster dgx-h100 --nodes 1 ";

void expect_one_line_error(const std::string& arguments, const std::string& flag)
{
  SCOPED_TRACE(arguments);
  const CliResult r = run_gputwin(arguments, true);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output.find(flag + ":"), r.output.find("error: ") + 7) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "one line: " << r.output;
}

TEST(MoeCli, BadPlansAreOneLineErrors)
{
  expect_one_line_error("simulate " + small + "--ep 3 --dp 6", "--ep");             // 8 experts over 3
  expect_one_line_error("simulate " + small + "--ep 8 --dp 4", "--ep");             // 8 x 1 > 4 ranks
  expect_one_line_error("simulate " + small + "--moe-topk 9 --dp 8", "--moe-topk"); // top-9 of 8
  expect_one_line_error("simulate " + small + "--ep 8 --dp 8 --moe-capacity-factor 0", "--moe-capacity-factor");
  expect_one_line_error("simulate " + small + "--ep 8 --dp 8 --moe-capacity-factor -1", "--moe-capacity-factor");
  expect_one_line_error("simulate " + small + "--ep 8 --dp 8 --moe-imbalance nan", "--moe-imbalance");
  expect_one_line_error("simulate " + small + "--ep 8 --dp 8 --moe-dispatcher nccl", "--moe-dispatcher");
  expect_one_line_error("simulate --model llama3-8b --cluster dgx-h100 --nodes 1 --ep 2 --dp 2", "--ep");
  expect_one_line_error("memory --model llama3-8b --moe-topk 2", "--moe-topk");
  expect_one_line_error("simulate " + small + "--ep 2 --tp 2 --dp 2 --no-sp", "--sp");
}

TEST(MoeCli, ImbalanceSlowsTheStepNamesTheSlowRankAndIsDeterministic)
{
  const std::string plan = "simulate " + small + "--ep 8 --dp 8 --global-batch 16 --zero 1 --json ";
  const CliResult balanced = run_gputwin(plan, false);
  const CliResult skewed = run_gputwin(plan + "--moe-imbalance 0.5 --moe-seed 3", false);
  const CliResult again = run_gputwin(plan + "--moe-imbalance 0.5 --moe-seed 3", false);
  ASSERT_EQ(balanced.exit_code, 0);
  ASSERT_EQ(skewed.exit_code, 0);
  const traces::JsonValue b = traces::parse_json(balanced.output), s = traces::parse_json(skewed.output);
  EXPECT_GT(number(s, "iteration_time_s"), number(b, "iteration_time_s"));
  const traces::JsonValue& moe = member(s, "moe");
  EXPECT_GT(number(moe, "max_rank_load"), 1.0);
  EXPECT_DOUBLE_EQ(number(member(b, "moe"), "max_rank_load"), 1.0);
  // The slowest EP rank is one of the first stage's EP group (ranks 0-7 here) and the report names the link kind.
  EXPECT_GE(number(moe, "slowest_rank"), 0);
  EXPECT_LT(number(moe, "slowest_rank"), 8);
  EXPECT_FALSE(member(moe, "busiest_link_kind").text.empty());
  EXPECT_GT(number(moe, "exchange_s"), 0);
  // The same seed gives the same report byte for byte but for the wall time.
  auto without_wall = [](std::string text) {
    const size_t at = text.find("\"sim_wall_time_s\"");
    return text.substr(0, at) + text.substr(text.find('\n', at));
  };
  EXPECT_EQ(without_wall(skewed.output), without_wall(again.output));
}

TEST(MoeCli, SearchCandidatesCarryTheirExpertLayout)
{
  const CliResult r = run_gputwin("search " + small + "--gpus 8 --global-batch 16 --top 2 --json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"ep\":"), std::string::npos) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("\"etp\":"), std::string::npos);
}

} // namespace
} // namespace gputwin::testing
