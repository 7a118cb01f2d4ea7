// `gputwin sweep` through the real binary: one CSV row per point, consistent scaling columns, a PNG drawn by
// gnuplot, points where nothing fits skipped with a warning, and bad input.
#include "run_cli.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gputwin::testing {
namespace {

std::string read_file(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

std::vector<std::string> split(const std::string& line, char separator)
{
  std::vector<std::string> items;
  std::stringstream stream(line);
  for (std::string item; std::getline(stream, item, separator);)
    items.push_back(item);
  if (!line.empty() && line.back() == separator)
    items.emplace_back();
  return items;
}

std::string temp_path(const std::string& name)
{
  return ::testing::TempDir() + "gputwin_sweep_" + name;
}

// A 12-layer gpt-22b (the same layer shapes, fast to simulate) on one and two DGX A100 nodes.
const std::string small_sweep = "sweep --model gpt-22b --layers 12 --cluster dgx-a100 --gpus 8,16 --global-batch 16 "
                                "--tokens 1e9 --price-per-gpu-hour 2.5";

TEST(SweepCli, OneCsvRowPerPointWithConsistentScalingColumnsAndAPng)
{
  const std::string csv = temp_path("points.csv"), png = temp_path("points.png");
  std::remove(csv.c_str());
  std::remove(png.c_str());
  const CliResult r = run_gputwin(small_sweep + " --csv '" + csv + "' --plot '" + png + "'", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("gpt-22b"), std::string::npos) << r.output;

  std::vector<std::string> lines = split(read_file(csv), '\n');
  ASSERT_FALSE(lines.empty());
  if (lines.back().empty())
    lines.pop_back();
  const std::string required = "cluster,gpus,tp,pp,dp,micro_batch,iteration_time_s,tokens_per_s,mfu,time_to_train_s,"
                               "gpu_hours,cost";
  ASSERT_EQ(lines.front().rfind(required, 0), 0u) << lines.front();
  const std::vector<std::string> header = split(lines.front(), ',');
  ASSERT_EQ(lines.size(), 3u) << "a header and one row per GPU count";
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> row = split(lines[i], ',');
    ASSERT_EQ(row.size(), header.size()) << lines[i];
    for (const std::string& cell : row)
      EXPECT_FALSE(cell.empty()) << lines[i];
    EXPECT_EQ(row[0], "dgx-a100");
    const double gpus = std::stod(row[1]);
    EXPECT_EQ(gpus, i == 1 ? 8 : 16);
    EXPECT_EQ(std::stod(row[2]) * std::stod(row[3]) * std::stod(row[4]), gpus) << "tp x pp x dp";
    const double tokens_per_s = std::stod(row[7]), time_to_train_s = std::stod(row[9]);
    const double gpu_hours = std::stod(row[10]), cost = std::stod(row[11]);
    EXPECT_GT(tokens_per_s, 0);
    EXPECT_GT(std::stod(row[8]), 0.1) << "MFU";
    EXPECT_NEAR(time_to_train_s / (1e9 / tokens_per_s), 1.0, 1e-9);
    EXPECT_NEAR(gpu_hours / (gpus * time_to_train_s / 3600), 1.0, 1e-9);
    EXPECT_NEAR(cost / (gpu_hours * 2.5), 1.0, 1e-9);
  }

  const std::string image = read_file(png);
  EXPECT_GT(image.size(), 1024u);
  EXPECT_EQ(image.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  std::remove(csv.c_str());
  std::remove(png.c_str());
}

TEST(SweepCli, PointsWhereNothingFitsAreSkippedWithAWarning)
{
  // 175B fits neither 8 nor 16 A100s: each point is skipped with its smallest plan's memory, then the sweep fails.
  const CliResult r = run_gputwin("sweep --model gpt3-175b --cluster dgx-a100 --gpus 8,16 --global-batch 8", true);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("skipping gpt3-175b on 8 GPUs of dgx-a100"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("needs"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no plan fits at any point"), std::string::npos) << r.output;
}

TEST(SweepCli, BadInputIsOneLineAndNamesTheReason)
{
  expect_one_line_error("sweep --model gpt3-175b --gpus 64:x2", "--gpus: expected");
  expect_one_line_error("sweep --model gpt3-175b --gpus 0,64", "--gpus: expected");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64:1024:x1", "--gpus: expected");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64,,128", "--gpus");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64,12 --cluster dgx-a100", "not a multiple of");
  expect_one_line_error("sweep --model gpt3-175b --cluster dgx-a100", "--gpus: required");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64 --tokens abc", "--tokens");
  expect_one_line_error("sweep --model gpt3-175b --gpus 64 --plot /tmp/x.jpg", "--plot");
}

} // namespace
} // namespace gputwin::testing
