// nccl-tests logs (sim/nccl_tests_log.hpp, `gputwin calibrate --nccl-tests`): parse_nccl_tests_log either returns
// rows with finite, positive times or throws InputError.
#include "fuzz_support.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/nccl_tests_log.hpp"

#include <cmath>
#include <sstream>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
  std::istringstream in{std::string(gputwin::fuzz::as_text(data, size))};
  gputwin::sim::NcclTestsLog log;
  try {
    log = gputwin::sim::parse_nccl_tests_log(in, "fuzz.log");
  } catch (const gputwin::InputError& e) {
    gputwin::fuzz::check_error_message(e);
    return 0;
  }
  ++gputwin::fuzz::accepted_inputs;
  if (log.ranks <= 0 || log.gpus_per_thread <= 0 || log.rows.empty())
    gputwin::fuzz::fail("log accepted with " + std::to_string(log.ranks) + " ranks, " +
                        std::to_string(log.gpus_per_thread) + " GPUs per thread and " +
                        std::to_string(log.rows.size()) + " rows");
  for (const gputwin::sim::NcclTestsRow& row : log.rows)
    if (!std::isfinite(row.bytes) || row.bytes < 0 || !std::isfinite(row.time_s) || !(row.time_s > 0))
      gputwin::fuzz::fail("row at line " + std::to_string(row.line) + " accepted with " + std::to_string(row.bytes) +
                          " bytes and " + std::to_string(row.time_s) + " s");
  return 0;
}
