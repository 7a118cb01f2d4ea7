// `gputwin compare --iterations FILE.csv`: each measured iteration beside the twin's, and the mean absolute
// percentage error: the twin's error on the user's own data.
#include "commands.hpp"
#include "iteration_cases.hpp"
#include "resource_estimate.hpp"

#include "gputwin/common/input_error.hpp"
#include "gputwin/sim/iteration_fit.hpp"
#include "gputwin/topologies/cluster_flags.hpp"
#include "gputwin/common/json_writer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
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
  add_max_work_flag(parser);
  add_max_memory_flag(parser);
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
  std::vector<sim::IterationCase> cases = std::move(checked.cases);
  const GpuComputeModel gpu =
      compute_model_for_gpu(parsed, cluster.gpu);
  const FrameworkProfile framework = framework_from_flags(parsed, default_framework_for(cluster.gpu.generation));
  const sim::IterationSet set(cluster, std::move(cases),
                              static_cast<int>(std::max<unsigned>(1, std::thread::hardware_concurrency())));
  const std::vector<double> predicted = set.predict(gpu, framework);
  std::vector<double> measured;
  double worst = 0;
  for (size_t i = 0; i < predicted.size(); ++i) {
    measured.push_back(set.cases()[i].measured_s);
    worst = std::max(worst, std::abs(predicted[i] / measured[i] - 1));
  }
  const double mape = sim::mean_absolute_percentage_error(predicted, measured);

  if (attention_note)
    std::cerr << "gputwin compare: note: " << *attention_note << "\n";
  for (const std::string& note : parsed.notes()) // what --megatron-args noted
    std::cerr << "gputwin compare: note: " << note << "\n";
  if (parsed.has("--json")) {
    JsonWriter json(out);
    json.begin_object();
    json.field("iterations", table_path);
    json.field("cluster", cluster.name);
    json.field("framework", framework.name);
    json.field("rows_compared", static_cast<int64_t>(predicted.size()));
    json.field("mean_absolute_percentage_error", mape);
    json.field("max_absolute_percentage_error", worst);
    json.key("rows");
    json.begin_array();
    for (size_t i = 0; i < predicted.size(); ++i) {
      const sim::IterationCase& c = set.cases()[i];
      json.begin_object();
      json.field("line", static_cast<int64_t>(c.line));
      json.field("plan", describe_plan(c.plan));
      json.field("overlap_grad_reduce", c.options.overlap_grad_reduce);
      json.field("overlap_param_gather", c.options.overlap_param_gather);
      json.field("tp_comm_overlap", c.options.tp_comm_overlap);
      json.field("hidden", c.model.hidden);
      json.field("layers", c.model.layers);
      json.field("measured_s", measured[i]);
      json.field("simulated_s", predicted[i]);
      json.field("relative_error", predicted[i] / measured[i] - 1);
      json.end_object();
    }
    json.end_array();
    json.end_object();
    out << "\n";
    return 0;
  }
  char line[512];
  std::snprintf(line, sizeof line, "%6s  %-6s %-3s %-72s %12s %12s %8s\n", "line", "h", "L", "plan", "measured ms",
                "twin ms", "error");
  out << line;
  for (size_t i = 0; i < predicted.size(); ++i) {
    const sim::IterationCase& c = set.cases()[i];
    std::snprintf(line, sizeof line, "%6d  %-6lld %-3lld %-72s %12.2f %12.2f %+7.1f%%\n", c.line,
                  static_cast<long long>(c.model.hidden), static_cast<long long>(c.model.layers),
                  describe_plan(c.plan).substr(0, 72).c_str(), 1e3 * measured[i], 1e3 * predicted[i],
                  100 * (predicted[i] / measured[i] - 1));
    out << line;
  }
  std::snprintf(line, sizeof line, "%zu rows: mean absolute error %.2f %%, worst %.2f %% (framework %s)\n",
                predicted.size(), 100 * mape, 100 * worst, framework.name.c_str());
  out << line;
  return 0;
}

} // namespace gputwin::cli
