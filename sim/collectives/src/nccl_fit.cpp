#include "gputwin/sim/nccl_fit.hpp"

#include "gputwin/sim/collective_plan.hpp"
#include "gputwin/topologies/cluster_graph.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace gputwin::sim {

namespace {

// The fitted parameters, each a reference into the spec; efficiencies stay in (0, 1].
struct Parameter {
  double* value;
  bool fraction;
};

std::vector<Parameter> parameters(topo::NcclSpec& n)
{
  std::vector<Parameter> p = {{&n.nvlink_efficiency, true}, {&n.net_efficiency, true}, {&n.kernel_s, false},
                              {&n.host_call_s, false},        {&n.host_launch_s_per_gpu, false},
                              {&n.channel_s, false},          {&n.channel_net_step_s, false}};
  for (topo::NcclProtocolSpec* proto : {&n.ll, &n.ll128, &n.simple})
    for (double* v : {&proto->base_latency_s, &proto->nvlink_step_s, &proto->net_step_s, &proto->channel_bytes_per_s})
      p.push_back({v, false});
  return p;
}

topo::ClusterSpec sized(const topo::ClusterSpec& cluster, int ranks)
{
  topo::ClusterSpec c = cluster;
  c.nodes = std::max(1, (ranks + c.gpus_per_node - 1) / c.gpus_per_node);
  return c;
}

// The longest route latency from the log's first GPU to another of its GPUs: the flow runner waits a route's
// latency before each transfer, so a collective that crosses the network pays it once on top of NCCL's latency.
double route_latency_s(const topo::ClusterSpec& cluster, int ranks)
{
  const topo::ClusterGraph graph(sized(cluster, ranks));
  double longest = 0;
  for (int dst = 1; dst < ranks; ++dst)
    longest = std::max(longest, graph.path_latency_s(graph.route(0, dst)));
  return longest;
}

std::vector<double> predict_rows(const topo::ClusterSpec& cluster, const NcclTestsLog& log, double route_s)
{
  const topo::ClusterSpec c = sized(cluster, log.ranks);
  std::vector<int> gpus;
  for (int r = 0; r < log.ranks; ++r)
    gpus.push_back(r);
  CollectiveOptions options;
  options.flows = false;
  options.gpus_per_thread = log.gpus_per_thread;
  std::vector<double> out;
  for (const NcclTestsRow& row : log.rows) {
    const CollectivePlan plan = plan_collective(c, log.op, gpus, row.bytes, options);
    const double device_s = plan.ranks > 1 && plan.bytes > 0 ? plan.transfer_s + plan.choice.latency_s + route_s : 0.0;
    out.push_back(nccl_back_to_back_call_s(device_s, plan.host_issue_s));
  }
  return out;
}

double objective(const topo::ClusterSpec& cluster, const std::vector<NcclTestsLog>& logs,
                 const std::vector<double>& route_s)
{
  double sum = 0;
  size_t count = 0;
  for (size_t l = 0; l < logs.size(); ++l) {
    const NcclTestsLog& log = logs[l];
    const std::vector<double> predicted = predict_rows(cluster, log, route_s[l]);
    std::vector<double> errors;
    for (size_t i = 0; i < predicted.size(); ++i)
      errors.push_back(std::abs(std::log(predicted[i] / log.rows[i].time_s)));
    std::sort(errors.begin(), errors.end());
    const size_t kept = std::max<size_t>(1, errors.size() - errors.size() / 10);
    for (size_t i = 0; i < kept; ++i)
      sum += errors[i];
    count += kept;
  }
  return count ? sum / static_cast<double>(count) : 0.0;
}

} // namespace

std::vector<double> predict_nccl_tests_log(const topo::ClusterSpec& cluster, const NcclTestsLog& log)
{
  return predict_rows(cluster, log, route_latency_s(cluster, log.ranks));
}

std::vector<NcclLogFit> nccl_log_errors(const topo::ClusterSpec& cluster, const std::vector<NcclTestsLog>& logs)
{
  std::vector<NcclLogFit> out;
  for (const NcclTestsLog& log : logs) {
    check_rank_placement(log, cluster.gpus_per_node, cluster.name);
    const std::vector<double> predicted = predict_nccl_tests_log(cluster, log);
    NcclLogFit f;
    f.path = log.path;
    f.ranks = log.ranks;
    f.rows = static_cast<int>(predicted.size());
    std::vector<double> errors;
    for (size_t i = 0; i < predicted.size(); ++i) {
      const double e = std::abs(predicted[i] / log.rows[i].time_s - 1);
      errors.push_back(e);
      f.within_15_percent += e <= 0.15 ? 1 : 0;
      f.max_abs_error = std::max(f.max_abs_error, e);
    }
    std::sort(errors.begin(), errors.end());
    const size_t m = errors.size();
    f.median_abs_error = m == 0 ? 0 : m % 2 ? errors[m / 2] : 0.5 * (errors[m / 2 - 1] + errors[m / 2]);
    out.push_back(f);
  }
  return out;
}

NcclFit fit_nccl(const topo::ClusterSpec& start, const std::vector<NcclTestsLog>& logs)
{
  if (logs.empty())
    throw std::invalid_argument("fit_nccl: no logs");
  for (const NcclTestsLog& log : logs)
    check_rank_placement(log, start.gpus_per_node, start.name);
  topo::ClusterSpec best = start;
  std::vector<double> route_s;
  for (const NcclTestsLog& log : logs)
    route_s.push_back(route_latency_s(start, log.ranks));
  double best_objective = objective(best, logs, route_s);
  // Multiplicative steps from x1.5 down to x1.01; a parameter at zero is tried at a small positive value.
  for (double step = 0.5; step >= 0.01; step /= 2) {
    for (int sweep = 0; sweep < 20; ++sweep) {
      bool improved = false;
      const size_t count = parameters(best.nccl).size();
      for (size_t k = 0; k < count; ++k) {
        for (const double factor : {1 + step, 1 / (1 + step)}) {
          topo::ClusterSpec trial = best;
          Parameter p = parameters(trial.nccl)[k];
          const bool is_rate = p.value == &trial.nccl.ll.channel_bytes_per_s ||
                               p.value == &trial.nccl.ll128.channel_bytes_per_s ||
                               p.value == &trial.nccl.simple.channel_bytes_per_s;
          *p.value = *p.value > 0 ? *p.value * factor : (factor > 1 ? (is_rate ? 1e9 : 1e-7) : 0.0);
          if (p.fraction && *p.value > 1)
            *p.value = 1;
          const double o = objective(trial, logs, route_s);
          if (o < best_objective - 1e-12) {
            best_objective = o;
            best = trial;
            improved = true;
          }
        }
      }
      if (!improved)
        break;
    }
  }
  NcclFit fit;
  fit.nccl = best.nccl;
  fit.objective = best_objective;
  fit.logs = nccl_log_errors(best, logs);
  return fit;
}

} // namespace gputwin::sim
