#include "gputwin/sim/resource_flags.hpp"

#include "gputwin/common/byte_size.hpp"
#include "gputwin/common/byte_text.hpp"
#include "gputwin/common/input_error.hpp"
#include "gputwin/models/host_memory.hpp"
#include "gputwin/sim/work_estimate.hpp"

#include <cstdio>
#include <optional>

namespace gputwin::sim {

void add_max_memory_flag(cli::ArgParser& parser)
{
  const int64_t machine = host_physical_memory_bytes();
  parser.add_option("--max-memory", "SIZE",
                    "refuse a run estimated to need more memory than SIZE, e.g. 64G (default: this machine's " +
                        (machine > 0 ? format_gib(static_cast<double>(machine)) : std::string("memory")) + ")");
}

int64_t max_memory_bytes(const cli::ParsedArgs& args)
{
  if (const auto text = args.value("--max-memory"))
    return cli::parse_byte_size("--max-memory", *text);
  return host_physical_memory_bytes();
}

void check_resources(const ResourceEstimate& estimate, int64_t limit_bytes, const cli::ParsedArgs& args,
                     const std::string& what)
{
  check_resources(estimate, limit_bytes, args.has("--max-memory"), what);
}

void add_max_work_flag(cli::ArgParser& parser)
{
  char text[32];
  std::snprintf(text, sizeof text, "%.0e", default_max_work);
  parser.add_option("--max-work", "N",
                    std::string("refuse a run estimated to build more than N items (pipeline-schedule steps, ops, "
                                "flows), e.g. 1e10 (default ") +
                        text + ")");
}

double max_work(const cli::ParsedArgs& args)
{
  const std::optional<std::string> text = args.value("--max-work");
  if (!text)
    return default_max_work;
  double value = -1;
  try {
    value = cli::parse_number("--max-work", *text);
  } catch (const InputError&) {
    value = -1;
  }
  if (!(value >= 1))
    throw InputError("--max-work: expected a number of items >= 1 (1e10), got '" + *text + "'");
  return value;
}

} // namespace gputwin::sim
