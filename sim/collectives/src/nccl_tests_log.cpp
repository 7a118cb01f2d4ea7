#include "gputwin/sim/nccl_tests_log.hpp"

#include "gputwin/common/input_error.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

namespace gputwin::sim {

namespace {

// A whole field as a finite number, or false ("inf" and "nan" are not sizes or times).
bool to_number(const std::string& field, double& value)
{
  char* end = nullptr;
  value = std::strtod(field.c_str(), &end);
  return !field.empty() && end == field.c_str() + field.size() && std::isfinite(value);
}

std::string strip_prefix(const std::string& line)
{
  static const std::regex mpirun_prefix(R"(^\[\d+,\d+\]<std(out|err)>:)");
  std::string s = std::regex_replace(line, mpirun_prefix, "");
  while (!s.empty() && (s.back() == '\r' || s.back() == '\n'))
    s.pop_back();
  return s;
}

} // namespace

NcclTestsLog parse_nccl_tests_log(std::istream& text, const std::string& path)
{
  NcclTestsLog log;
  log.path = path;
  int time_column = 4; // size count type redop time ...; newer nccl-tests add `root` before time
  std::string raw;
  for (int number = 1; std::getline(text, raw); ++number) {
    const std::string line = strip_prefix(raw);
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string w; words >> w;)
      fields.push_back(w);
    if (fields.empty())
      continue;
    if (fields[0] == "#" || fields[0].front() == '#') {
      for (size_t i = 0; i + 1 < fields.size(); ++i) {
        if (fields[i] == "Rank")
          ++log.ranks;
        if (fields[i] == "nGpus")
          log.gpus_per_thread = std::max(1, std::atoi(fields[i + 1].c_str()));
        if (fields[i] == "redop" && i + 1 < fields.size() && fields[i + 1] == "root")
          time_column = 5;
      }
      for (const auto& [name, op] : {std::pair{"all_gather", CollectiveOp::AllGather},
                                     std::pair{"reduce_scatter", CollectiveOp::ReduceScatter},
                                     std::pair{"broadcast", CollectiveOp::Broadcast},
                                     std::pair{"sendrecv", CollectiveOp::SendRecv},
                                     std::pair{"alltoall", CollectiveOp::AllToAll}})
        if (line.find(std::string(name) + "_perf") != std::string::npos)
          log.op = op;
      continue;
    }
    double bytes = 0;
    if (!to_number(fields[0], bytes)) // not a data row: nccl-tests' own messages
      continue;
    double time_us = 0;
    if (static_cast<int>(fields.size()) <= time_column || !to_number(fields[static_cast<size_t>(time_column)], time_us) ||
        !(time_us * 1e-6 > 0) || bytes < 0)
      throw InputError(path + ":" + std::to_string(number) + ": expected a size and a positive out-of-place time (us), got '" +
                       line + "'");
    log.rows.push_back({bytes, time_us * 1e-6, number});
  }
  if (log.rows.empty())
    throw InputError(path + ": no data rows (expected nccl-tests output: size count type redop time ...)");
  if (log.ranks == 0)
    throw InputError(path + ": no '#  Rank N ...' device lines (expected nccl-tests output naming its ranks)");
  return log;
}

NcclTestsLog read_nccl_tests_log(const std::string& path)
{
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw InputError(path + ": cannot read the file");
  return parse_nccl_tests_log(file, path);
}

} // namespace gputwin::sim
