// A measured-iteration table's rows as cases (iteration_cases.hpp).
#include "gputwin/sim/iteration_cases.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/sim/scenario.hpp"
#include "gputwin/topologies/cluster_flags.hpp"

#include <algorithm>
#include <cctype>
#include <map>

namespace gputwin::sim {

namespace {

using cli::ArgParser;
using cli::ParsedArgs;

// The model and plan options a row may set or the command line gives every row (iteration_table.hpp), in the
// order they are passed on.
constexpr const char* row_options[] = {"--model",
                                       "--hidden",
                                       "--heads",
                                       "--layers",
                                       "--seq-len",
                                       "--vocab",
                                       "--num-query-groups",
                                       "--ffn-hidden",
                                       "--activation",
                                       "--norm",
                                       "--position",
                                       "--plan",
                                       "--tp",
                                       "--cp",
                                       "--pp",
                                       "--dp",
                                       "--micro-batch",
                                       "--global-batch",
                                       "--recompute",
                                       "--attention",
                                       "--schedule",
                                       "--chunks",
                                       "--zero",
                                       "--pp-first-stage-layers",
                                       "--pp-last-stage-layers",
                                       "--precision"};
// Switches a row may set (true|false), the command line's when it does not: (flag, column name).
constexpr std::pair<const char*, const char*> row_switches[] = {{"--sp", "sp"}, {"--fp8", "precision"}};
// Switches only the command line gives.
constexpr const char* command_line_switches[] = {"--untie-embeddings",    "--no-bias",
                                                 "--no-dropout",          "--no-sp",
                                                 "--fp8-param-gather",    "--no-fp8-param-gather",
                                                 "--grad-reduce-in-bf16", "--cross-entropy-fusion"};

// The row's value of an integer plan flag, else the command line's, else 1.
int64_t row_integer(const MeasuredIteration& row, const ParsedArgs& flags, const char* flag)
{
  const auto it = row.flags.find(flag);
  return it != row.flags.end() ? std::stoll(it->second) : flags.integer(flag).value_or(1);
}

// The row's switches (its own true|false, else the command line's) and the command line's own switches.
void add_switches(const MeasuredIteration& row, const ParsedArgs& flags, std::vector<std::string>& args)
{
  for (const auto& [flag, column] : row_switches) {
    const auto from_row = row.flags.find(flag);
    std::string value = from_row != row.flags.end() ? from_row->second : (flags.has(flag) ? "true" : "false");
    std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::tolower(c); });
    if (value != "true" && value != "false" && value != "1" && value != "0")
      throw InputError(std::string(column) + ": expected true or false, got '" + value + "'");
    if (value == "true" || value == "1")
      args.emplace_back(flag);
  }
  for (const char* flag : command_line_switches)
    if (flags.has(flag))
      args.emplace_back(flag);
}

// The row's flags on top of the command line's, read by `parser` (the model and plan flags; built once per table).
ParsedArgs row_arguments(const MeasuredIteration& row, const ParsedArgs& flags, ArgParser& parser)
{
  std::vector<std::string> args;
  add_switches(row, flags, args);
  // A GPU count without a dp column (and no --dp): the data-parallel replicas are what the other dimensions leave.
  if (row.gpus > 0 && !row.flags.count("--dp") && !flags.has("--dp")) {
    const int64_t model_parallel =
        row_integer(row, flags, "--tp") * row_integer(row, flags, "--cp") * row_integer(row, flags, "--pp");
    if (model_parallel < 1 || row.gpus % model_parallel != 0)
      throw InputError("GPUs: " + std::to_string(row.gpus) + " is not a multiple of tp x cp x pp = " +
                       std::to_string(model_parallel) + " (expected a dp column or --dp)");
    args.emplace_back("--dp");
    args.push_back(std::to_string(row.gpus / model_parallel));
  }
  for (const char* flag : row_options) {
    const auto from_row = row.flags.find(flag);
    if (from_row != row.flags.end()) {
      args.emplace_back(flag);
      args.push_back(from_row->second);
    } else if (const auto value = flags.value(flag)) {
      args.emplace_back(flag);
      args.push_back(*value);
    }
  }
  return parser.parse(args);
}

// The case of a row not seen before: the row's flags over the command line's, validated as `simulate` would.
IterationCase read_case(const IterationTable& table, const MeasuredIteration& row, const ParsedArgs& flags,
                        const topo::ClusterSpec& cluster, ArgParser& parser, const IterationRowReaders& readers)
{
  const std::string where = table.path + ":" + std::to_string(row.line) + ": ";
  IterationCase c;
  c.line = row.line;
  c.measured_s = row.iteration_time_s;
  if (const auto model = row.flags.find("--model"); model != row.flags.end())
    c.group = model->second;
  try {
    const ParsedArgs args = row_arguments(row, flags, parser);
    c.model = readers.model(args);
    c.plan = read_plan(args, c.model);
    check_precision_supported(c.plan, cluster);
    c.options = readers.overlaps(flags, c.plan);
  } catch (const InputError& e) {
    throw InputError(where + e.what());
  }
  if (row.gpus > 0 && row.gpus != c.plan.gpus())
    throw InputError(where + "GPUs: the row says " + std::to_string(row.gpus) +
                     " but tp x cp x pp x dp = " + std::to_string(c.plan.gpus()));
  if (row.grad_accum > 0 && row.grad_accum != c.plan.micro_batches())
    throw InputError(table.path + ":" + std::to_string(row.line) + ":" + std::to_string(row.grad_accum_column) +
                     ": grad_accum: the row says " + std::to_string(row.grad_accum) +
                     " but global_batch / (micro_batch x dp) = " + std::to_string(c.plan.effective_global_batch()) +
                     " / (" + std::to_string(c.plan.micro_batch) + " x " + std::to_string(c.plan.dp) +
                     ") = " + std::to_string(c.plan.micro_batches()));
  if (c.plan.gpus() > cluster.gpus())
    throw InputError(where + "the plan needs " + std::to_string(c.plan.gpus()) + " GPUs but the cluster has " +
                     std::to_string(cluster.gpus()) + " (expected --nodes)");
  return c;
}

ArgParser row_parser()
{
  ArgParser parser("row", "");
  add_model_flags(parser);
  add_plan_flags(parser);
  return parser;
}

} // namespace

std::vector<IterationCase> iteration_cases(const IterationTable& table, const ParsedArgs& flags,
                                           const topo::ClusterSpec& cluster, const IterationRowReaders& readers)
{
  std::vector<IterationCase> cases;
  cases.reserve(table.rows.size());
  ArgParser parser = row_parser();
  // Rows that state the same flags, GPUs and micro-batches are the same case: each is read and checked once (a
  // table of repeated runs, or one repeated to fill memory, costs its distinct rows).
  std::map<std::string, size_t> first_case; // the row's content -> the index of its first case
  for (const MeasuredIteration& row : table.rows) {
    std::string content = std::to_string(row.gpus) + '\n' + std::to_string(row.grad_accum) + '\n';
    for (const auto& [flag, value] : row.flags)
      content.append(flag).append(1, '\0').append(value).append(1, '\n');
    const auto [seen, inserted] = first_case.emplace(std::move(content), cases.size());
    if (!inserted) {
      IterationCase c = cases[seen->second];
      c.line = row.line;
      c.measured_s = row.iteration_time_s;
      cases.push_back(std::move(c));
      continue;
    }
    cases.push_back(read_case(table, row, flags, cluster, parser, readers));
  }
  return cases;
}

std::optional<SampledIterationCases> sample_iteration_cases(const std::string& path, const ParsedArgs& flags,
                                                            const IterationRowReaders& readers, int sampled_rows)
{
  SampledIterationCases sampled;
  try {
    const IterationTableSample sample = sample_iteration_table(path, sampled_rows);
    sampled.estimated_rows = sample.estimated_rows;
    if (sampled.estimated_rows <= sampled_rows)
      return std::nullopt;
    const topo::ClusterSpec cluster = iteration_cluster(sample.table, flags);
    sampled.cluster_gpus = cluster.gpus();
    ArgParser parser = row_parser();
    for (const MeasuredIteration& row : sample.table.rows)
      sampled.cases.push_back(read_case(sample.table, row, flags, cluster, parser, readers));
  } catch (const InputError&) {
    return std::nullopt;
  }
  return sampled;
}

topo::ClusterSpec iteration_cluster(const IterationTable& table, const ParsedArgs& flags)
{
  topo::ClusterSpec cluster = topo::read_cluster(flags);
  if (flags.has("--nodes"))
    return cluster;
  int64_t gpus = 1;
  for (const MeasuredIteration& row : table.rows) {
    int64_t g = row.gpus;
    if (g == 0) {
      g = 1;
      for (const char* f : {"--tp", "--cp", "--pp", "--dp"})
        g *= row_integer(row, flags, f);
    }
    gpus = std::max(gpus, g);
  }
  const int64_t nodes = (gpus + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
  return topo::read_cluster(flags, static_cast<int>(nodes)); // the fault flags kept
}

} // namespace gputwin::sim
