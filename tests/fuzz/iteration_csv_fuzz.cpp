// Tables of measured iterations (models/iteration_table.hpp, vTrain's CSV and gputwin's column names):
// read_iteration_table either returns rows with finite, positive times or throws InputError.
#include "fuzz_support.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/models/iteration_table.hpp"

#include <cmath>

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
  for (const gputwin::MeasuredIteration& row : table.rows)
    if (!std::isfinite(row.iteration_time_s) || !(row.iteration_time_s > 0) || row.gpus < 0)
      gputwin::fuzz::fail("row " + std::to_string(row.line) + " accepted with time " +
                          std::to_string(row.iteration_time_s) + " s and " + std::to_string(row.gpus) + " GPUs");
  return 0;
}
