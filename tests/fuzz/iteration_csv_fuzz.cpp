// Tables of measured iterations (models/iteration_table.hpp, vTrain's CSV and gputwin's column names):
// read_iteration_table either returns rows with finite, positive times or throws InputError; sample_iteration_table
// (rows at byte offsets) either throws InputError or returns rows each of which the whole reading also returns.
#include "fuzz_support.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/models/iteration_table.hpp"

#include <map>
#include <string>

#include <cmath>
#include <set>
#include <tuple>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  const std::string path = gputwin::fuzz::input_file(gputwin::fuzz::as_text(data, size), "fuzz-iterations.csv");
  gputwin::IterationTable table;
  try {
    table = gputwin::read_iteration_table(path);
  } catch (const gputwin::InputError& e) {
    gputwin::fuzz::check_error_message(e);
    return 0;
  }
  ++gputwin::fuzz::accepted_inputs;
  using Key = std::tuple<std::map<std::string, std::string>, double, int64_t, int64_t>;
  std::set<Key> rows;
  for (const gputwin::MeasuredIteration& row : table.rows) {
    if (!std::isfinite(row.iteration_time_s) || !(row.iteration_time_s > 0) || row.gpus < 0)
      gputwin::fuzz::fail("row " + std::to_string(row.line) + " accepted with time " +
                          std::to_string(row.iteration_time_s) + " s and " + std::to_string(row.gpus) + " GPUs");
    rows.insert({row.flags, row.iteration_time_s, row.gpus, row.grad_accum});
  }
  // The file read whole is valid, so every line a sample lands on is one of its rows.
  gputwin::IterationTableSample sample;
  try {
    sample = gputwin::sample_iteration_table(path, 8);
  } catch (const gputwin::InputError& e) {
    gputwin::fuzz::fail(std::string("the sample refused a table read whole: ") + e.what());
  }
  for (const gputwin::MeasuredIteration& row : sample.table.rows)
    if (!rows.count({row.flags, row.iteration_time_s, row.gpus, row.grad_accum}))
      gputwin::fuzz::fail("a sampled row is not a row of the table (time " + std::to_string(row.iteration_time_s) + ")");
  if (sample.estimated_rows < 0)
    gputwin::fuzz::fail("a negative row estimate");
  return 0;
}
