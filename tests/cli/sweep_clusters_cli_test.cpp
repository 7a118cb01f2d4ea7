// `gputwin sweep` across GPU generations through the real binary: TP up to the NVLink domain (72 GPUs on an NVL72,
// not its 4-GPU trays), and --price-per-gpu-hour per cluster (NAME=P,...) with its one-line errors.
#include "run_cli.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace gputwin::testing {
namespace {

std::vector<std::string> split(const std::string& line, char separator)
{
  std::vector<std::string> items;
  std::stringstream stream(line);
  for (std::string item; std::getline(stream, item, separator);)
    items.push_back(item);
  return items;
}

// The rows of the CSV file `path` as column name -> cell.
std::vector<std::map<std::string, std::string>> csv_rows(const std::string& path)
{
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::vector<std::string> lines = split(text.str(), '\n');
  std::vector<std::map<std::string, std::string>> rows;
  if (lines.size() < 2) // line 1: the sweep's identity (# gputwin sweep ...), line 2: the header
    return rows;
  const std::vector<std::string> header = split(lines[1], ',');
  for (size_t i = 2; i < lines.size(); ++i) {
    if (lines[i].empty())
      continue;
    const std::vector<std::string> cells = split(lines[i], ',');
    std::map<std::string, std::string> row;
    for (size_t c = 0; c < header.size() && c < cells.size(); ++c)
      row[header[c]] = cells[c];
    rows.push_back(row);
  }
  return rows;
}

// One layer, one sample, 8 GPUs: pp and dp must be 1 and cp is 1 (sequence 2048), so the only plan is tp 8 --
// which spans two 4-GPU trays of an NVL72 rack, inside its NVLink domain.
const std::string one_layer = "--model gpt-22b --layers 1 --gpus 8 --global-batch 1";

TEST(SweepClustersCli, TensorParallelismReachesAcrossTraysOfOneNvlinkDomain)
{
  const std::string csv = test_temp_path("tp.csv");
  const CliResult r = run_gputwin("sweep " + one_layer + " --cluster gb200-nvl72 --csv '" + csv + "'", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rows = csv_rows(csv);
  ASSERT_EQ(rows.size(), 1u) << r.output;
  EXPECT_EQ(rows[0].at("cluster"), "gb200-nvl72");
  EXPECT_EQ(rows[0].at("tp"), "8");
  EXPECT_EQ(rows[0].at("pp"), "1");
}

TEST(SweepClustersCli, PricePerClusterCostsEachClusterAtItsOwnPrice)
{
  const std::string csv = test_temp_path("prices.csv"), one_csv = test_temp_path("one-price.csv");
  const CliResult r = run_gputwin("sweep " + one_layer + " --cluster dgx-h100,gb200-nvl72 --tokens 1e9 "
                                  "--price-per-gpu-hour dgx-h100=2.5,gb200-nvl72=6 --csv '" + csv + "'",
                                  false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rows = csv_rows(csv);
  ASSERT_EQ(rows.size(), 2u) << r.output;
  const std::map<std::string, double> price = {{"dgx-h100", 2.5}, {"gb200-nvl72", 6}};
  for (const auto& row : rows) {
    const double gpu_hours = std::stod(row.at("gpu_hours")), cost = std::stod(row.at("cost"));
    EXPECT_NEAR(cost / (gpu_hours * price.at(row.at("cluster"))), 1.0, 1e-4) << row.at("cluster");
  }
  // One number still prices every cluster.
  const CliResult one = run_gputwin("sweep " + one_layer + " --cluster dgx-h100,gb200-nvl72 --tokens 1e9 "
                                    "--price-per-gpu-hour 3 --csv '" + one_csv + "'",
                                    false);
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const auto one_rows = csv_rows(one_csv);
  EXPECT_EQ(one_rows.size(), 2u);
  for (const auto& row : one_rows)
    EXPECT_NEAR(std::stod(row.at("cost")) / (std::stod(row.at("gpu_hours")) * 3), 1.0, 1e-4) << row.at("cluster");
}

TEST(SweepClustersCli, PricePerClusterErrorsAreOneLineNamingTheFlag)
{
  const std::string sweep = "sweep " + one_layer + " --cluster dgx-h100,gb200-nvl72 --tokens 1e9 ";
  expect_one_line_error(sweep + "--price-per-gpu-hour dgx-h100=2.5",
                        "--price-per-gpu-hour: no price for gb200-nvl72");
  expect_one_line_error(sweep + "--price-per-gpu-hour dgx-h100=2.5,gb200-nvl72=6,dgx-b200=4",
                        "--price-per-gpu-hour: a price for dgx-b200, which is not a cluster of --cluster");
  expect_one_line_error(sweep + "--price-per-gpu-hour dgx-h100=2.5,dgx-h100=3,gb200-nvl72=6",
                        "--price-per-gpu-hour: two prices for dgx-h100");
  expect_one_line_error(sweep + "--price-per-gpu-hour dgx-h100=x,gb200-nvl72=6",
                        "--price-per-gpu-hour: expected a non-negative number");
  expect_one_line_error(sweep + "--price-per-gpu-hour dgx-h100=2.5,6", "--price-per-gpu-hour: expected NAME=P");
  const CliResult r = run_gputwin(sweep + "--price-per-gpu-hour dgx-h100=2.5", true);
  EXPECT_EQ(r.exit_code, 2);
}

} // namespace
} // namespace gputwin::testing
