// sample_iteration_table (models/iteration_table.hpp): rows read at byte offsets spread over a file, for the guard
// that refuses a table too large to read before reading it. The sampled rows must be rows of the file, the row count
// its size implies close to the real one, and a bad header the same error as the whole reading's.
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/iteration_table.hpp"
#include "test_temp_path.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <tuple>

namespace gputwin::testing {
namespace {

std::string write_table(const std::string& name, const std::string& text)
{
  const std::string path = test_temp_path(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// (hidden, layers, time) of a row.
std::tuple<std::string, std::string, double> key(const MeasuredIteration& row)
{
  return {row.flags.at("--hidden"), row.flags.at("--layers"), row.iteration_time_s};
}

TEST(IterationTableSample, RowsAreTheFilesAndTheirCountFollowsTheSize)
{
  // Rows of uneven length (hidden sizes of 3 to 6 digits), a blank line, CR LF line ends and a byte-order mark.
  std::string text = "\xEF\xBB\xBFhidden,layers,tp,iteration_time_ms\r\n";
  for (int i = 0; i < 5000; ++i) {
    text += std::to_string(64 + 37 * i * (i % 7)) + "," + std::to_string(1 + i % 96) + ",1," +
            std::to_string(100 + i % 13) + "\r\n";
    if (i == 2500)
      text += "\r\n";
  }
  const std::string path = write_table("sample-rows.csv", text);
  const IterationTable whole = read_iteration_table(path);
  ASSERT_EQ(whole.rows.size(), 5000u);
  std::set<std::tuple<std::string, std::string, double>> rows;
  for (const MeasuredIteration& row : whole.rows)
    rows.insert(key(row));

  const IterationTableSample sample = sample_iteration_table(path, 64);
  EXPECT_EQ(sample.table.columns, whole.columns);
  ASSERT_EQ(sample.table.rows.size(), 64u);
  std::set<std::tuple<std::string, std::string, double>> distinct;
  for (const MeasuredIteration& row : sample.table.rows) {
    EXPECT_TRUE(rows.count(key(row))) << std::get<0>(key(row)) << "," << std::get<1>(key(row));
    distinct.insert(key(row));
  }
  EXPECT_GT(distinct.size(), 60u); // spread over the file, not the first rows again and again
  EXPECT_NEAR(static_cast<double>(sample.estimated_rows), 5000.0, 5000.0 * 0.05);
  std::remove(path.c_str());
}

TEST(IterationTableSample, SmallFilesAndBadHeaders)
{
  // Fewer rows than samples: offsets fall on the same rows, every sampled row is still a row, the count about right.
  const std::string few = write_table("sample-few.csv", "hidden,layers,iteration_time_s\n1024,2,0.5\n2048,4,0.75\n");
  const IterationTableSample sample = sample_iteration_table(few, 64);
  ASSERT_FALSE(sample.table.rows.empty());
  for (const MeasuredIteration& row : sample.table.rows)
    EXPECT_TRUE(row.flags.at("--hidden") == "1024" || row.flags.at("--hidden") == "2048");
  EXPECT_EQ(sample.estimated_rows, 2);
  // A header alone: no rows, no estimate (the whole reading reports it).
  const std::string header = write_table("sample-header.csv", "hidden,layers,iteration_time_s\n\n");
  EXPECT_EQ(sample_iteration_table(header, 8).estimated_rows, 0);
  // The header's errors are read_iteration_table's.
  const std::string bad = write_table("sample-bad.csv", "hidden,colour,iteration_time_s\n1,2,3\n");
  for (auto read : {+[](const std::string& p) { (void)read_iteration_table(p); },
                    +[](const std::string& p) { (void)sample_iteration_table(p, 8); }}) {
    try {
      read(bad);
      ADD_FAILURE() << "accepted an unknown column";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(bad + ":1:8: unknown column 'colour'"), std::string::npos) << e.what();
    }
  }
  // A line longer than any row (64 KiB and more): no estimate, the whole reading reports the row.
  const std::string wide =
      write_table("sample-wide.csv", "hidden,layers,iteration_time_s\n1024,2," + std::string(100000, '5') + "\n");
  EXPECT_EQ(sample_iteration_table(wide, 8).estimated_rows, 0);
  const std::string empty = write_table("sample-empty.csv", "\n \n");
  EXPECT_THROW((void)sample_iteration_table(empty, 8), InputError);
  EXPECT_THROW((void)sample_iteration_table(test_temp_path("sample-missing.csv"), 8), InputError);
  for (const std::string& p : {few, header, bad, wide, empty})
    std::remove(p.c_str());
}

} // namespace
} // namespace gputwin::testing
