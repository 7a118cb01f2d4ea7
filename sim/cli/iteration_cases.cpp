#include "iteration_cases.hpp"

#include "commands.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/topologies/cluster_flags.hpp"

#include <algorithm>

namespace gputwin::cli {

namespace {

// The model and plan flags a row may set (iteration_table.hpp), in the order they are passed on.
constexpr const char* row_flags[] = {"--model", "--hidden",       "--heads",        "--layers", "--seq-len",
                                     "--vocab", "--plan",         "--tp",           "--pp",     "--dp",
                                     "--micro-batch", "--global-batch", "--sp", "--recompute", "--attention",
                                     "--schedule", "--chunks", "--zero"};

ParsedArgs row_arguments(const MeasuredIteration& row, const ParsedArgs& flags, const std::string& where)
{
  std::vector<std::string> args;
  for (const char* flag : row_flags) {
    const auto from_row = row.flags.find(flag);
    if (std::string(flag) == "--sp") {
      std::string value = from_row != row.flags.end() ? from_row->second : (flags.has("--sp") ? "true" : "false");
      std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::tolower(c); });
      if (value != "true" && value != "false" && value != "1" && value != "0")
        throw InputError(where + "sp: expected true or false, got '" + value + "'");
      if (value == "true" || value == "1")
        args.emplace_back("--sp");
      continue;
    }
    if (from_row != row.flags.end()) {
      args.emplace_back(flag);
      args.push_back(from_row->second);
    } else if (const auto value = flags.value(flag)) {
      args.emplace_back(flag);
      args.push_back(*value);
    }
  }
  ArgParser parser("row", "");
  add_model_flags(parser);
  add_plan_flags(parser);
  return parser.parse(args);
}

} // namespace

void add_iteration_table_flags(ArgParser& parser)
{
  parser.add_option("--iterations", "FILE.csv", "measured iteration times (columns: see README, vTrain's accepted)");
  add_model_flags(parser);
  add_plan_flags(parser);
  parser.add_option("--gpu-model", "FILE", "GPU compute model (and framework) file; default: the cluster GPU's");
  add_framework_flag(parser);
  topo::add_cluster_flags(parser);
  parser.add_switch("--json", "machine-readable report");
}

std::vector<sim::IterationCase> iteration_cases(const IterationTable& table, const ParsedArgs& flags,
                                                const topo::ClusterSpec& cluster)
{
  std::vector<sim::IterationCase> cases;
  for (const MeasuredIteration& row : table.rows) {
    const std::string where = table.path + ":" + std::to_string(row.line) + ": ";
    sim::IterationCase c;
    c.line = row.line;
    c.measured_s = row.iteration_time_s;
    try {
      const ParsedArgs args = row_arguments(row, flags, where);
      c.model = model_from_flags(args);
      c.plan = read_plan(args, c.model);
      check_fp8_supported(c.plan, cluster);
    } catch (const InputError& e) {
      throw InputError(where + e.what());
    }
    if (row.gpus > 0 && row.gpus != c.plan.gpus())
      throw InputError(where + "GPUs: the row says " + std::to_string(row.gpus) + " but tp x pp x dp = " +
                       std::to_string(c.plan.gpus()));
    if (c.plan.gpus() > cluster.gpus())
      throw InputError(where + "the plan needs " + std::to_string(c.plan.gpus()) + " GPUs but the cluster has " +
                       std::to_string(cluster.gpus()) + " (expected --nodes)");
    cases.push_back(std::move(c));
  }
  return cases;
}

topo::ClusterSpec iteration_cluster(const IterationTable& table, const ParsedArgs& flags)
{
  topo::ClusterSpec cluster = topo::read_cluster(flags);
  if (flags.has("--nodes"))
    return cluster;
  int64_t gpus = 1;
  for (const MeasuredIteration& row : table.rows) {
    int64_t g = 1;
    for (const char* f : {"--tp", "--pp", "--dp"}) {
      const auto it = row.flags.find(f);
      g *= it != row.flags.end() ? std::stoll(it->second) : flags.integer(f).value_or(1);
    }
    gpus = std::max(gpus, g);
  }
  const int64_t nodes = (gpus + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
  return topo::read_cluster(flags, static_cast<int>(nodes)); // the fault flags kept
}

} // namespace gputwin::cli
