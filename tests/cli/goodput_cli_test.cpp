// `gputwin goodput` through the real binary: the check (GPT-3 175B on 1024 GPUs, the plan `goodput
// --search` chooses there, given as flags), its checkpoint interval against Young's sqrt(2 delta M) with delta and M
// worked out here from the inputs and the memory model; `--search` against `gputwin search` on one node; the
// plan-flag path against `gputwin simulate`, and bad input.
#include "json_plan.hpp"
#include "run_cli.hpp"

#include "gputwin/models/goodput.hpp"
#include "gputwin/models/model_catalog.hpp"
#include "gputwin/traces/json_value.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace gputwin::testing {
namespace {

// The plan is the one `goodput --model gpt3-175b --gpus 1024 --search --global-batch 1536` chooses, given as flags
// and simulated (19.31 s; 2 s of CPU instead of the search's 2.5 minutes of estimates): what is checked here is
// the arithmetic on the iteration time; the search path is SearchIsTheBestPlanOfGputwinSearch.
TEST(GoodputCli, Gpt3On1024GpusIntervalIsYoungsToFirstOrder)
{
  const CliResult r = run_gputwin("goodput --model gpt3-175b --gpus 1024 --tp 4 --pp 8 --dp 32 --micro-batch 1 "
                                  "--global-batch 1536 --sp --recompute selective --schedule interleaved --chunks 4 "
                                  "--zero 1 --tokens 300e9 --mtbf-gpu-hours 50000 "
                                  "--checkpoint-write-gbps 10 --restart-s 600 --json",
                                  false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const traces::JsonValue report = traces::parse_json(r.output);
  for (const char* key : {"goodput_fraction", "checkpoint_interval_s", "expected_time_to_train_s", "gpu_hours"})
    EXPECT_GT(number(report, key), 0) << key;
  EXPECT_EQ(member(report, "plan_source").text, "flags");
  EXPECT_NEAR(number(report, "iteration_time_s"), 19.31, 0.1); // as simulated after the search
  EXPECT_EQ(number(report, "gpus"), 1024);
  const ParallelPlan plan = plan_of(report);
  EXPECT_EQ(plan.gpus(), 1024);
  EXPECT_EQ(plan.effective_global_batch(), 1536);

  // delta: the memory model's weights + optimizer states of every rank of the chosen plan, at 10 GB/s.
  const GptConfig& gpt3 = find_catalog_model("gpt3-175b")->model;
  const int64_t bytes = checkpoint_size(gpt3, plan).bytes;
  EXPECT_EQ(number(report, "checkpoint_bytes"), static_cast<double>(bytes));
  EXPECT_NEAR(static_cast<double>(bytes) / (14 * 174.6e9), 1.0, 0.01) << "14 bytes per parameter";
  const double delta = static_cast<double>(bytes) / 10e9; // ~245 s
  EXPECT_DOUBLE_EQ(number(report, "checkpoint_time_s"), delta);
  // M: the job's MTBF, 50000 GPU-hours over 1024 GPUs.
  const double m = 50000.0 * 3600 / 1024; // 175781.25 s
  EXPECT_DOUBLE_EQ(number(report, "job_mtbf_s"), m);

  // The interval is sqrt(2 delta M) to first order: Daly's correction is -2/3 sqrt(delta/(2M)) relative plus
  // higher orders, within sqrt(delta/(2M)) (2.6% here) of Young's.
  const double young = std::sqrt(2 * delta * m);
  EXPECT_DOUBLE_EQ(number(report, "young_interval_s"), young);
  const double interval = number(report, "checkpoint_interval_s");
  EXPECT_NEAR(interval / young, 1.0, std::sqrt(delta / (2 * m)));
  EXPECT_LT(interval, young); // Daly's optimum is shorter: the checkpoint itself can be interrupted
  EXPECT_NEAR(number(report, "checkpoint_interval_iterations"), interval / number(report, "iteration_time_s"), 0.5);

  // Time to train and GPU-hours.
  const double iterations = number(report, "iterations");
  EXPECT_EQ(iterations, std::ceil(300e9 / (1536.0 * 2048)));
  const double solve = iterations * number(report, "iteration_time_s");
  EXPECT_NEAR(number(report, "failure_free_time_s") / solve, 1.0, 1e-12);
  const double wall = number(report, "expected_time_to_train_s");
  EXPECT_NEAR(wall / (m * std::exp(600 / m) * std::expm1((interval + delta) / m) * solve / interval), 1.0, 1e-12);
  EXPECT_NEAR(number(report, "goodput_fraction"), solve / wall, 1e-12);
  EXPECT_GT(number(report, "goodput_fraction"), 0.9); // waste ~ sqrt(2 delta / M) + R / M ~ 6%
  EXPECT_LT(number(report, "goodput_fraction"), 1.0);
  EXPECT_NEAR(number(report, "gpu_hours") / (1024 * wall / 3600), 1.0, 1e-12);
  EXPECT_NEAR(number(report, "expected_failures"), wall / m, 1e-9);
  EXPECT_EQ(number(report, "expected_restarts"), number(report, "expected_failures"));
  EXPECT_NEAR(solve + number(report, "checkpoint_overhead_s") + number(report, "restart_overhead_s") +
                  number(report, "lost_work_s"),
              wall, 1e-6 * wall);
  EXPECT_GT(number(report, "lost_work_s"), 0);
}

// --search: the plan, overlaps and simulated iteration time of the best plan of `gputwin search` (a 12-layer
// gpt-22b on one DGX A100 node), and the goodput arithmetic on that iteration time.
TEST(GoodputCli, SearchIsTheBestPlanOfGputwinSearch)
{
  const std::string job = "--model gpt-22b --layers 12 --gpus 8 --global-batch 8";
  const CliResult g = run_gputwin("goodput " + job + " --search --tokens 1e9 --mtbf-gpu-hours 20000 "
                                  "--checkpoint-write-gbps 2 --restart-s 300 --json",
                                  false);
  ASSERT_EQ(g.exit_code, 0) << g.output;
  const CliResult s = run_gputwin("search " + job + " --json", false);
  ASSERT_EQ(s.exit_code, 0) << s.output;
  const traces::JsonValue report = traces::parse_json(g.output);
  const traces::JsonValue ranked = traces::parse_json(s.output);
  ASSERT_FALSE(ranked.items.empty());
  const traces::JsonValue& best = ranked.items.front();
  EXPECT_EQ(member(report, "plan_source").text, "search");
  EXPECT_EQ(number(report, "gpus"), 8);
  EXPECT_EQ(describe_plan(plan_of(report)), describe_plan(plan_of(best)));
  for (const char* overlap : {"tp_comm_overlap", "overlap_grad_reduce", "overlap_param_gather"})
    EXPECT_EQ(member(report, overlap).boolean, member(best, overlap).boolean) << overlap;
  EXPECT_DOUBLE_EQ(number(report, "iteration_time_s"), number(best, "iteration_time_s"));
  const double iterations = std::ceil(1e9 / (8.0 * 2048));
  EXPECT_EQ(number(report, "iterations"), iterations);
  EXPECT_NEAR(number(report, "failure_free_time_s") / (iterations * number(best, "iteration_time_s")), 1.0, 1e-12);
}

// A 12-layer gpt-22b on one DGX A100 node: the plan-flag path simulates as `gputwin simulate` does.
const std::string small_plan = "--model gpt-22b --layers 12 --tp 8 --global-batch 4 --sp --recompute selective";
const std::string failures = "--tokens 1e9 --mtbf-gpu-hours 20000 --checkpoint-write-gbps 2 --restart-s 300";

TEST(GoodputCli, PlanFlagsUseTheSimulatedIterationAndATableIsPrinted)
{
  const CliResult g = run_gputwin("goodput " + small_plan + " " + failures + " --json", false);
  ASSERT_EQ(g.exit_code, 0) << g.output;
  const CliResult s = run_gputwin("simulate " + small_plan + " --json", false);
  ASSERT_EQ(s.exit_code, 0) << s.output;
  const traces::JsonValue report = traces::parse_json(g.output);
  EXPECT_EQ(member(report, "plan_source").text, "flags");
  EXPECT_EQ(number(report, "iteration_time_s"), number(traces::parse_json(s.output), "iteration_time_s"));
  EXPECT_DOUBLE_EQ(number(report, "job_mtbf_s"), 20000.0 * 3600 / 8);
  EXPECT_DOUBLE_EQ(number(report, "checkpoint_time_s"), number(report, "checkpoint_bytes") / 2e9);
  EXPECT_EQ(number(report, "iterations"), std::ceil(1e9 / (4.0 * 2048)));

  const CliResult table = run_gputwin("goodput " + small_plan + " " + failures, false);
  ASSERT_EQ(table.exit_code, 0) << table.output;
  for (const char* text : {"checkpoint interval (Daly)", "Young's sqrt(2 delta M)", "expected failures", "lost work",
                           "expected time to train", "goodput", "GPU-hours"})
    EXPECT_NE(table.output.find(text), std::string::npos) << text << "\n" << table.output;
}

TEST(GoodputCli, BadInputIsOneLineWithExitStatus2)
{
  const std::string base = "goodput " + small_plan;
  const auto bad = [&](const std::string& arguments, const std::string& expected) {
    expect_one_line_error(arguments, expected);
    EXPECT_EQ(run_gputwin(arguments, true).exit_code, 2) << arguments;
  };
  bad(base + " --mtbf-gpu-hours 20000 --checkpoint-write-gbps 2 --restart-s 300", "--tokens: required");
  bad(base + " --tokens 1e9 --mtbf-gpu-hours 0 --checkpoint-write-gbps 2 --restart-s 300", "--mtbf-gpu-hours");
  bad(base + " --tokens 1e9 --mtbf-gpu-hours -5 --checkpoint-write-gbps 2 --restart-s 300", "--mtbf-gpu-hours");
  bad(base + " --tokens 1e9 --mtbf-gpu-hours 20000 --checkpoint-write-gbps 0 --restart-s 300",
      "--checkpoint-write-gbps");
  bad(base + " --tokens 1e9 --mtbf-gpu-hours 20000 --checkpoint-write-gbps -1 --restart-s 300",
      "--checkpoint-write-gbps");
  bad(base + " --tokens 1e9 --mtbf-gpu-hours 20000 --checkpoint-write-gbps 2 --restart-s -1", "--restart-s");
  bad(base + " --tokens 1e9 --mtbf-gpu-hours 20000 --checkpoint-write-gbps 2", "--restart-s: required");
  bad(base + " --tokens x --mtbf-gpu-hours 20000 --checkpoint-write-gbps 2 --restart-s 1", "--tokens");
  bad(base + " " + failures + " --search --gpus 8", "--tp: not with --search");
  bad("goodput --model gpt-22b --search " + failures, "--gpus: required with --search");
  bad(base + " " + failures + " --gpus 16", "--gpus: 16 but the plan's tp x pp x dp is 8");
  // Decimal numbers only (cli::parse_number): strtod took hex, inf and nan.
  bad(base + " --tokens 0x10 --mtbf-gpu-hours 20000 --checkpoint-write-gbps 2 --restart-s 1",
      "--tokens: expected a positive number");
  bad(base + " --tokens 1e9 --mtbf-gpu-hours inf --checkpoint-write-gbps 2 --restart-s 1",
      "--mtbf-gpu-hours: expected a positive number");
  bad(base + " --tokens 1e9 --mtbf-gpu-hours 20000 --checkpoint-write-gbps nan --restart-s 1",
      "--checkpoint-write-gbps: expected a positive number");
}

} // namespace
} // namespace gputwin::testing
