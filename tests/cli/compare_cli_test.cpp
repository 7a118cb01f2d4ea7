// `gputwin compare` on the shipped CPU traces: measured beside replayed and simulated, with the mean error.
#include "run_cli.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

namespace gputwin::testing {
namespace {

const std::string traces_dir = std::string(GPUTWIN_TEST_DATA_DIR) + "/traces/";

TEST(CompareCli, TableWithReplayedAndCalibratedSimulatedColumns)
{
  const std::string model = test_temp_path("cpu.gpu-model.yaml");
  ASSERT_EQ(run_gputwin("calibrate '" + traces_dir + "cpu-tp1.json' -o '" + model + "'", false).exit_code, 0);
  const CliResult r = run_gputwin("compare '" + traces_dir + "cpu-tp1.json' '" + traces_dir +
                                      "cpu-tp2-pp2.json' --gpu-model '" + model + "' --json",
                                  false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* key :
       {"\"measured_iteration_time_s\"", "\"replayed_iteration_time_s\"", "\"simulated_iteration_time_s\"",
        "\"replay_mean_absolute_error\"", "\"simulated_mean_absolute_error\""})
    EXPECT_NE(r.output.find(key), std::string::npos) << key;
  const CliResult table = run_gputwin("compare '" + traces_dir + "cpu-tp1.json'", false);
  ASSERT_EQ(table.exit_code, 0);
  EXPECT_NE(table.output.find("mean absolute error"), std::string::npos);
}

TEST(CompareCli, BadInput)
{
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"compare", "expected one or more trace files"},
      {"compare /nonexistent.json", "/nonexistent.json"},
      {"compare '" + traces_dir + "cpu-tp1.json' --gpu-model /nonexistent.yaml", "/nonexistent.yaml"},
  };
  for (const auto& [args, expected] : cases)
    expect_one_line_error(args, expected);
}

} // namespace
} // namespace gputwin::testing
