#include "iteration_cases.hpp"

#include "commands.hpp"
#include "overlap_flags.hpp"
#include "gputwin/sim/resource_estimate.hpp"
#include "gputwin/sim/resource_flags.hpp"
#include "gputwin/sim/work_estimate.hpp"

#include "gputwin/models/plan_flags.hpp"
#include "gputwin/sim/iteration_cases.hpp"
#include "gputwin/topologies/cluster_flags.hpp"

namespace gputwin::cli {

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

CheckedIterationTable read_checked_iteration_table(const std::string& path, const ParsedArgs& flags,
                                                   const std::string& what)
{
  const sim::IterationRowReaders readers{model_from_flags, overlap_options_from_flags};
  const int64_t memory_limit = sim::max_memory_bytes(flags);
  constexpr int kSampledRows = 64;
  if (memory_limit > 0)
    if (const auto sampled = sim::sample_iteration_cases(path, flags, readers, kSampledRows)) {
      const sim::ResourceEstimate e = sim::estimate_iteration_table(sampled->cluster_gpus, sampled->cases,
                                                          static_cast<size_t>(sampled->estimated_rows));
      if (e.bytes > 2.0 * static_cast<double>(memory_limit))
        sim::check_resources(e, memory_limit, flags,
                        what + " (from " + std::to_string(sampled->cases.size()) +
                            " rows sampled over the file, about " + std::to_string(sampled->estimated_rows) +
                            " rows by its size)");
    }
  CheckedIterationTable checked;
  checked.table = read_iteration_table(path);
  checked.cluster = sim::iteration_cluster(checked.table, flags);
  checked.cases = sim::iteration_cases(checked.table, flags, checked.cluster, readers);
  sim::check_work(sim::iteration_cases_work(checked.cases), sim::max_work(flags), what);
  sim::check_resources(sim::estimate_iteration_cases(checked.cluster.gpus(), checked.cases), memory_limit, flags, what);
  return checked;
}

} // namespace gputwin::cli
