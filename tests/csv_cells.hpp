#pragma once
// The data rows of a small reference CSV in tests/data (plain comma-separated cells, no quoting), header skipped.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gputwin::testing {

// Each data row of `path` split at commas; a row without `columns` cells fails the test and is left out.
inline std::vector<std::vector<std::string>> csv_data_rows(const std::string& path, size_t columns)
{
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::string line;
  std::getline(in, line); // header
  std::vector<std::vector<std::string>> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream split(line);
    for (std::string cell; std::getline(split, cell, ',');)
      cells.push_back(cell);
    EXPECT_EQ(cells.size(), columns) << path << ": " << line;
    if (cells.size() == columns)
      rows.push_back(std::move(cells));
  }
  return rows;
}

} // namespace gputwin::testing
