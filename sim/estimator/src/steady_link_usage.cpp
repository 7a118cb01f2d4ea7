#include "gputwin/sim/steady_link_usage.hpp"

#include "gputwin/sim/stage_accounting.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gputwin::sim {

namespace {

// Whether two usages are the same, link by link: counts exactly, bytes to `relative` of their size, busy times to
// that or `busy_s` more.
bool same_usage(const LinkUsage& a, const LinkUsage& b, double relative, double busy_s)
{
  const auto close = [relative](double x, double y, double slack = 0) {
    return std::abs(x - y) <= relative * std::max(std::abs(x), std::abs(y)) + slack;
  };
  if (a.flows != b.flows || a.links.size() != b.links.size() || !close(a.flow_bytes, b.flow_bytes) ||
      !close(a.inter_domain_bytes, b.inter_domain_bytes))
    return false;
  for (size_t i = 0; i < a.links.size(); ++i) {
    const LinkTraffic& x = a.links[i];
    const LinkTraffic& y = b.links[i];
    if (x.link != y.link || x.flows != y.flows || !close(x.bytes, y.bytes) || !close(x.busy_s, y.busy_s, busy_s))
      return false;
  }
  return true;
}

} // namespace

std::optional<LinkUsage> period_link_usage(const topo::ClusterGraph& graph, const FlowLog& log,
                                           const std::vector<traces::RankProgram>& programs,
                                           const SteadyStateSample& sample, const SteadyPeriod& period)
{
  const double t_s = period.period_s;
  if (!(t_s > 0))
    return std::nullopt;
  // The repeating micro-batches: [first, end + step), the pairs (i, i + step) steady_period matched.
  const int64_t begin = period.first_micro_batch;
  const int64_t end = sample.micro_batches - sample.warmup;
  std::vector<std::vector<int32_t>> micro_batch_of;
  micro_batch_of.reserve(programs.size());
  for (const traces::RankProgram& program : programs)
    micro_batch_of.push_back(period_micro_batches(program));
  double start_ends_s = -std::numeric_limits<double>::infinity(); // the last non-repeating flow of the start ends
  double end_starts_s = std::numeric_limits<double>::infinity();  // the first one of the end starts
  for (const FlowRecord& f : log.flows) {
    if (f.tag < 0 || flow_tag_program(f.tag) >= programs.size() ||
        flow_tag_op(f.tag) >= micro_batch_of[flow_tag_program(f.tag)].size())
      return std::nullopt; // a flow of no op: where it repeats is unknown
    const int64_t mb = micro_batch_of[flow_tag_program(f.tag)][flow_tag_op(f.tag)];
    if (mb < begin)
      start_ends_s = std::max(start_ends_s, f.end_s);
    else if (mb >= end)
      end_starts_s = std::min(end_starts_s, f.start_s);
  }
  if (!std::isfinite(start_ends_s) || !(start_ends_s + 2 * t_s <= end_starts_s))
    return std::nullopt;
  // x where no flow starts near it (nor, the flows repeating, near x + T and x + 2T): the middle of the widest gap
  // between flow starts in [earliest, latest], so rounding cannot move a flow from one window into the other.
  const double earliest_s = start_ends_s, latest_s = std::min(start_ends_s + t_s, end_starts_s - 2 * t_s);
  std::vector<double> starts{earliest_s, latest_s};
  double run_s = 0;
  for (const FlowRecord& f : log.flows) {
    run_s = std::max(run_s, f.end_s);
    if (f.start_s > earliest_s && f.start_s < latest_s)
      starts.push_back(f.start_s);
  }
  std::sort(starts.begin(), starts.end());
  double x_s = earliest_s, widest_s = -1;
  for (size_t i = 1; i < starts.size(); ++i)
    if (starts[i] - starts[i - 1] > widest_s) {
      widest_s = starts[i] - starts[i - 1];
      x_s = 0.5 * (starts[i - 1] + starts[i]);
    }
  const LinkUsage first = link_usage(graph, log, x_s, x_s + t_s);
  const LinkUsage second = link_usage(graph, log, x_s + t_s, x_s + 2 * t_s);
  // Counts exactly; bytes to rounding; busy times to the executor's 1e-9 s steps over the run (as the figures).
  if (!same_usage(first, second, 1e-9, 1e-8 * run_s))
    return std::nullopt;
  return first;
}

} // namespace gputwin::sim
