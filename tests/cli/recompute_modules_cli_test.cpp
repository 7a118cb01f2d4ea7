// --recompute-modules through the CLI: the plan as the report states it, what the reruns cost and save, the
// one-line refusals.
#include "json_report.hpp"
#include "run_cli.hpp"

#include <gtest/gtest.h>

#include <string>

namespace gputwin::testing {
namespace {

// DeepSeek-V3 cut to 5 layers (3 dense, 2 MoE) on one DGX H100: TP 2 with SP, EP 4, 4 micro-batches.
const std::string deepseek = "--model deepseek-v3 --layers 5 --mtp-layers 0 --cluster dgx-h100 --nodes 1 --tp 2 "
                             "--dp 4 --ep 4 --etp 1 --sp --attention flash --global-batch 16 --seq-len 4096 --zero 1 --allow-oom --json";

TEST(RecomputeModulesCli, ReportedAndPaidForInTimeAndSavedInMemory)
{
  const traces::JsonValue none = cli_json_report("simulate " + deepseek);
  const traces::JsonValue up = cli_json_report("simulate " + deepseek + " --recompute-modules mla_up_proj");
  const traces::JsonValue moe = cli_json_report("simulate " + deepseek + " --recompute-modules mla_up_proj,moe");
  EXPECT_EQ(member(member(up, "plan"), "recompute").text, "selective"); // implied
  EXPECT_EQ(member(member(up, "plan"), "recompute_modules").text, "mla_up_proj");
  EXPECT_EQ(member(none, "plan").find("recompute_modules"), nullptr);
  // Each rerun costs time and executed FLOPs; the model FLOPs stay.
  EXPECT_GT(number(up, "iteration_time_s"), number(none, "iteration_time_s"));
  EXPECT_GT(number(moe, "iteration_time_s"), number(up, "iteration_time_s"));
  EXPECT_GT(number(up, "hardware_flops"), number(none, "hardware_flops"));
  EXPECT_EQ(number(up, "model_flops"), number(none, "model_flops"));
  // ... and saves memory.
  const auto peak = [](const traces::JsonValue& r) { return number(r, "peak_memory_bytes"); };
  EXPECT_LT(peak(up), peak(none));
  EXPECT_LT(peak(moe), peak(up));
}

TEST(RecomputeModulesCli, BadInputIsOneLine)
{
  expect_one_line_error("simulate " + deepseek + " --recompute-modules attn", "--recompute-modules: expected");
  expect_one_line_error("simulate " + deepseek + " --recompute full --recompute-modules mlp",
                        "--recompute-modules: needs --recompute selective");
  expect_one_line_error("memory --model llama3-8b --recompute-modules mla_up_proj", "mla_up_proj needs a model");
  expect_one_line_error("simulate " + deepseek + " --recompute-modules moe --overlap-moe-expert-parallel-comm",
                        "moe in --recompute-modules");
}

} // namespace
} // namespace gputwin::testing
