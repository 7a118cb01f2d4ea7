// `gputwin compare --iterations FILE.csv`: the flags and the table read, each measured iteration put beside the
// twin's (sim/calibration/iteration_calibration.hpp) and printed with the mean absolute percentage error.
#include "commands.hpp"
#include "iteration_cases.hpp"
#include "gputwin/sim/resource_estimate.hpp"
#include "gputwin/sim/resource_flags.hpp"
#include "gputwin/sim/work_estimate.hpp"

#include "gputwin/sim/iteration_calibration.hpp"
#include "gputwin/topologies/cluster_flags.hpp"

#include <algorithm>
#include <iostream>
#include <thread>

namespace gputwin::cli {

int run_compare_iterations(const std::vector<std::string>& args, std::ostream& out)
{
  ArgParser parser("gputwin compare --iterations",
                   "Puts each measured iteration of a table beside the twin's estimate (the workload, compute model,\n"
                   "host model and folded communication of `simulate`, timed by the contention-free executor of\n"
                   "`simulate --estimate`) and reports the mean absolute percentage error.\n\n"
                   "example: gputwin compare --iterations ground_truth_single.csv --gpu-model v.yaml --recompute full \\\n"
                   "           --schedule 1f1b --vocab 50257 --json");
  add_iteration_table_flags(parser);
  sim::add_max_work_flag(parser);
  sim::add_max_memory_flag(parser);
  ParsedArgs parsed = parser.parse(args);
  // Stated on stderr once the run has succeeded (an error stays one line).
  const std::optional<std::string> attention_note =
      default_attention_for_gpu(parsed, topo::read_cluster(parsed).gpu.generation);
  if (parser.help_requested()) {
    out << parser.help();
    return 0;
  }
  const std::string table_path = parsed.value("--iterations").value_or("");
  CheckedIterationTable checked = read_checked_iteration_table(table_path, parsed, "the comparison of " + table_path);
  const topo::ClusterSpec& cluster = checked.cluster;
  const GpuComputeModel gpu = compute_model_for_gpu(parsed, cluster.gpu);
  const FrameworkProfile framework = framework_from_flags(parsed, default_framework_for(cluster.gpu.generation));
  const sim::IterationComparison comparison =
      sim::compare_iterations(table_path, cluster, std::move(checked.cases), gpu, framework,
                              static_cast<int>(std::max<unsigned>(1, std::thread::hardware_concurrency())));
  if (attention_note)
    std::cerr << "gputwin compare: note: " << *attention_note << "\n";
  for (const std::string& note : parsed.notes()) // what --megatron-args noted
    std::cerr << "gputwin compare: note: " << note << "\n";
  if (parsed.has("--json"))
    sim::write_iteration_comparison_json(out, comparison);
  else
    sim::print_iteration_comparison(out, comparison);
  return 0;
}

} // namespace gputwin::cli
