#include "gputwin/sim/nccl_tests_log.hpp"

#include "gputwin/common/input_error.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <vector>

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

// A `#  Rank N [Group G] Pid P on HOST device D ...` line (`fields`: its words): rank N must be the next one; its
// host is recorded.
void read_rank_line(const std::vector<std::string>& fields, const std::string& line, NcclTestsLog& log,
                    const std::string& where)
{
  const auto rank_at = std::find(fields.begin(), fields.end(), "Rank");
  int rank = -1;
  if (rank_at + 1 != fields.end()) {
    const std::string& text = *(rank_at + 1);
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), rank);
    if (error != std::errc() || end != text.data() + text.size())
      rank = -1;
  }
  if (rank != log.ranks)
    throw InputError(where + ": expected '#  Rank " + std::to_string(log.ranks) +
                     " ... on HOST device D' (Rank lines number the ranks 0, 1, 2, ... in order), got '" + line + "'");
  const auto on = std::find(rank_at, fields.end(), "on");
  log.rank_hosts.push_back(on != fields.end() && on + 1 != fields.end() ? *(on + 1) : std::string());
  ++log.ranks;
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
    if (line.find('\0') != std::string::npos)
      throw InputError(path + ":" + std::to_string(number) +
                       ": a NUL byte (a damaged log; expected the text nccl-tests prints)");
    if (fields[0] == "#" || fields[0].front() == '#') {
      if (std::find(fields.begin(), fields.end(), "Rank") != fields.end())
        read_rank_line(fields, line, log, path + ":" + std::to_string(number));
      for (size_t i = 0; i + 1 < fields.size(); ++i) {
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
  if (log.ranks == 1)
    throw InputError(path + ": one rank (Rank 0 alone): a collective of one GPU moves nothing to fit (expected a log "
                            "of 2 or more ranks)");
  return log;
}

void check_rank_placement(const NcclTestsLog& log, int gpus_per_node, const std::string& cluster_name)
{
  if (gpus_per_node < 1)
    throw std::invalid_argument("check_rank_placement: gpus_per_node must be positive");
  // A Rank line without its host: nothing to check.
  if (std::find(log.rank_hosts.begin(), log.rank_hosts.end(), "") != log.rank_hosts.end() ||
      log.rank_hosts.size() != static_cast<size_t>(log.ranks))
    return;
  std::vector<std::pair<std::string, int>> hosts; // (host, ranks on it) in first-seen order
  bool packed = true;
  for (size_t r = 0; r < log.rank_hosts.size(); ++r) {
    const std::string& host = log.rank_hosts[r];
    auto it = std::find_if(hosts.begin(), hosts.end(), [&](const auto& h) { return h.first == host; });
    if (it == hosts.end())
      it = hosts.insert(hosts.end(), {host, 0});
    ++it->second;
    // The fit puts rank r on node r / gpus_per_node: the host of r must be the (r / gpus_per_node)-th one seen.
    packed = packed && static_cast<size_t>(it - hosts.begin()) == r / static_cast<size_t>(gpus_per_node);
  }
  const int nodes = (log.ranks + gpus_per_node - 1) / gpus_per_node;
  if (packed && static_cast<int>(hosts.size()) == nodes)
    return;
  std::string layout;
  for (const auto& [host, count] : hosts)
    layout += (layout.empty() ? "" : ", ") + host + ": " + std::to_string(count);
  throw InputError(log.path + ": " + std::to_string(log.ranks) + " ranks on " + std::to_string(hosts.size()) +
                   " host(s) (" + layout + "), but the fit places them " + std::to_string(gpus_per_node) +
                   " per node of cluster '" + cluster_name + "' on " + std::to_string(nodes) +
                   " node(s) (expected each host to run " + std::to_string(gpus_per_node) +
                   " consecutive ranks, the last host the rest; or --cluster with that many GPUs per node)");
}

NcclTestsLog read_nccl_tests_log(const std::string& path)
{
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw InputError(path + ": cannot read the file");
  return parse_nccl_tests_log(file, path);
}

} // namespace gputwin::sim
