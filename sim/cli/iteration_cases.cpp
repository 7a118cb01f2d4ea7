#include "iteration_cases.hpp"

#include "commands.hpp"
#include "overlap_flags.hpp"
#include "resource_estimate.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/models/plan_flags.hpp"
#include "gputwin/topologies/cluster_flags.hpp"

#include <algorithm>
#include <map>

namespace gputwin::cli {

namespace {

// The model and plan options a row may set or the command line gives every row (iteration_table.hpp), in the
// order they are passed on.
constexpr const char* row_options[] = {
    "--model", "--hidden", "--heads", "--layers", "--seq-len", "--vocab", "--num-query-groups", "--ffn-hidden",
    "--activation", "--norm", "--position", "--plan", "--tp", "--cp", "--pp", "--dp", "--micro-batch",
    "--global-batch", "--recompute", "--attention", "--schedule", "--chunks", "--zero", "--pp-first-stage-layers",
    "--pp-last-stage-layers", "--precision"};
// Switches a row may set (true|false), the command line's when it does not: (flag, column name).
constexpr std::pair<const char*, const char*> row_switches[] = {{"--sp", "sp"}, {"--fp8", "precision"}};
// Switches only the command line gives.
constexpr const char* command_line_switches[] = {"--untie-embeddings", "--no-bias", "--no-dropout", "--no-sp",
                                                 "--fp8-param-gather", "--no-fp8-param-gather",
                                                 "--grad-reduce-in-bf16", "--cross-entropy-fusion"};

// The row's value of an integer plan flag, else the command line's, else 1.
int64_t row_integer(const MeasuredIteration& row, const ParsedArgs& flags, const char* flag)
{
  const auto it = row.flags.find(flag);
  return it != row.flags.end() ? std::stoll(it->second) : flags.integer(flag).value_or(1);
}

// The row's flags on top of the command line's, read by `parser` (the model and plan flags; built once per table).
ParsedArgs row_arguments(const MeasuredIteration& row, const ParsedArgs& flags, ArgParser& parser)
{
  std::vector<std::string> args;
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

} // namespace

void add_iteration_table_flags(ArgParser& parser)
{
  parser.add_option("--iterations", "FILE.csv",
                    "measured iteration times (columns: see README; vTrain's and dgxc-benchmarking's accepted)");
  add_model_flags(parser);
  add_plan_flags(parser);
  add_overlap_flags(parser);
  parser.add_option("--gpu-model", "FILE", "GPU compute model (and framework) file; default: the cluster GPU's");
  add_framework_flag(parser);
  topo::add_cluster_flags(parser);
  parser.add_switch("--json", "machine-readable report");
}

namespace {

// The case of a row not seen before: the row's flags over the command line's, validated as `simulate` would.
sim::IterationCase read_case(const IterationTable& table, const MeasuredIteration& row, const ParsedArgs& flags,
                             const topo::ClusterSpec& cluster, ArgParser& parser)
{
  const std::string where = table.path + ":" + std::to_string(row.line) + ": ";
  sim::IterationCase c;
  c.line = row.line;
  c.measured_s = row.iteration_time_s;
  if (const auto model = row.flags.find("--model"); model != row.flags.end())
    c.group = model->second;
  try {
    const ParsedArgs args = row_arguments(row, flags, parser);
    c.model = model_from_flags(args);
    c.plan = read_plan(args, c.model);
    check_precision_supported(c.plan, cluster);
    c.options = overlap_options_from_flags(flags, c.plan);
  } catch (const InputError& e) {
    throw InputError(where + e.what());
  }
  if (row.gpus > 0 && row.gpus != c.plan.gpus())
    throw InputError(where + "GPUs: the row says " + std::to_string(row.gpus) + " but tp x cp x pp x dp = " +
                     std::to_string(c.plan.gpus()));
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

std::vector<sim::IterationCase> iteration_cases(const IterationTable& table, const ParsedArgs& flags,
                                                const topo::ClusterSpec& cluster)
{
  std::vector<sim::IterationCase> cases;
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
      sim::IterationCase c = cases[seen->second];
      c.line = row.line;
      c.measured_s = row.iteration_time_s;
      cases.push_back(std::move(c));
      continue;
    }
    cases.push_back(read_case(table, row, flags, cluster, parser));
  }
  return cases;
}

namespace {

// Refuses the table at `path` when rows sampled over the file, at the row count its size implies, are estimated at
// more than twice the memory limit: before the file is read whole, so the refusal costs the sample whatever the
// file's size. A sample that cannot be read or costed is left to the whole reading, which names the first bad row.
void refuse_from_sample(const std::string& path, const ParsedArgs& flags, int64_t memory_limit, const std::string& what)
{
  constexpr int kSampledRows = 64;
  std::vector<sim::IterationCase> sampled;
  int64_t rows = 0;
  topo::ClusterSpec cluster;
  try {
    const IterationTableSample sample = sample_iteration_table(path, kSampledRows);
    rows = sample.estimated_rows;
    if (rows <= kSampledRows)
      return;
    cluster = iteration_cluster(sample.table, flags);
    ArgParser parser = row_parser();
    for (const MeasuredIteration& row : sample.table.rows)
      sampled.push_back(read_case(sample.table, row, flags, cluster, parser));
  } catch (const InputError&) {
    return;
  }
  const ResourceEstimate e = estimate_iteration_table(cluster.gpus(), sampled, static_cast<size_t>(rows));
  if (e.bytes > 2.0 * static_cast<double>(memory_limit))
    check_resources(e, memory_limit, flags,
                    what + " (from " + std::to_string(sampled.size()) + " rows sampled over the file, about " +
                        std::to_string(rows) + " rows by its size)");
}

} // namespace

CheckedIterationTable read_checked_iteration_table(const std::string& path, const ParsedArgs& flags,
                                                   const std::string& what)
{
  const int64_t memory_limit = max_memory_bytes(flags);
  if (memory_limit > 0)
    refuse_from_sample(path, flags, memory_limit, what);
  CheckedIterationTable checked;
  checked.table = read_iteration_table(path);
  checked.cluster = iteration_cluster(checked.table, flags);
  checked.cases = iteration_cases(checked.table, flags, checked.cluster);
  check_work(iteration_cases_work(checked.cases), max_work(flags), what);
  check_resources(estimate_iteration_cases(checked.cluster.gpus(), checked.cases), memory_limit, flags, what);
  return checked;
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

} // namespace gputwin::cli
